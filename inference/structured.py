"""``response_format``: parsing and checking it up front (DESIGN 4.4)."""

import json
from typing import Any

from jsonschema import validators
from jsonschema.exceptions import SchemaError

from inference.errors import invalid_request
from inference.providers.types import ResponseFormat


def parse_response_format(raw: dict[str, Any] | None) -> ResponseFormat | None:
    if raw is None:
        return None
    kind = raw.get("type")
    if kind == "text":
        return None
    if kind == "json_object":
        return ResponseFormat(kind="json_object")
    if kind != "json_schema":
        raise invalid_request(
            "response_format.type must be 'text', 'json_object' or 'json_schema'",
            param="response_format.type",
            code="invalid_response_format",
        )
    wrapper = raw.get("json_schema")
    if not isinstance(wrapper, dict):
        raise invalid_request(
            "response_format.json_schema must be an object holding the JSON Schema",
            param="response_format.json_schema",
            code="invalid_response_format",
        )
    # The OpenAI shape wraps the schema ({name, schema, strict}); a bare schema is accepted too.
    wrapped = isinstance(wrapper.get("schema"), dict)
    schema = wrapper["schema"] if wrapped else wrapper
    _check_schema(
        schema, "response_format.json_schema.schema" if wrapped else "response_format.json_schema"
    )
    name = wrapper.get("name") if wrapped and isinstance(wrapper.get("name"), str) else "response"
    return ResponseFormat(
        kind="json_schema", schema=schema, name=name, strict=bool(wrapper.get("strict", False))
    )


def _check_schema(schema: dict[str, Any], param: str) -> None:
    validator = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        validator.check_schema(schema)
    except SchemaError as error:
        location = "/".join(str(part) for part in error.path) or "(root)"
        raise invalid_request(
            f"{param} is not a valid JSON Schema at {location}: {error.message}",
            param=param,
            code="invalid_json_schema",
        ) from error


def structured_output_instruction(response_format: ResponseFormat) -> str:
    if response_format.schema is None:
        return "Reply with a single valid JSON object and nothing else: no prose, no code fence."
    return (
        "Reply with a single JSON value that validates against this JSON Schema, and nothing "
        "else: no prose, no code fence.\n" + json.dumps(response_format.schema, sort_keys=True)
    )
