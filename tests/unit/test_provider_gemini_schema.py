"""JSON Schema → Gemini ``responseSchema``, and the fallback when it cannot be converted."""

from typing import Any

import pytest

from inference.neutral.types import ChatRequest, Message, ResponseFormat
from inference.providers.gemini_format import encode_request
from inference.providers.gemini_schema import to_gemini_schema


def test_nested_schema_converts_with_upper_case_types_and_drops_unknown_keys() -> None:
    schema = {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "additionalProperties": False,
        "properties": {
            "name": {"type": "string", "description": "Full name", "minLength": 1},
            "nickname": {"type": ["string", "null"]},
            "role": {"type": "string", "enum": ["admin", "user"]},
            "scores": {"type": "array", "items": {"type": "integer", "minimum": 0}},
            "contact": {"anyOf": [{"type": "string"}, {"type": "object", "properties": {}}]},
        },
        "required": ["name"],
    }

    assert to_gemini_schema(schema) == {
        "type": "OBJECT",
        "properties": {
            "name": {"type": "STRING", "description": "Full name", "minLength": 1},
            "nickname": {"type": "STRING", "nullable": True},
            "role": {"type": "STRING", "enum": ["admin", "user"]},
            "scores": {"type": "ARRAY", "items": {"type": "INTEGER", "minimum": 0}},
            "contact": {"anyOf": [{"type": "STRING"}, {"type": "OBJECT", "properties": {}}]},
        },
        "required": ["name"],
    }


@pytest.mark.parametrize(
    "schema",
    [
        {"$defs": {"a": {"type": "string"}}, "$ref": "#/$defs/a"},
        {"oneOf": [{"type": "string"}, {"type": "integer"}]},
        {"type": ["string", "integer"]},
        {"type": "integer", "enum": [1, 2]},
        {"type": "object", "properties": {"a": {"const": "x"}}},
    ],
)
def test_schemas_the_subset_cannot_carry_are_not_converted(schema: dict[str, Any]) -> None:
    assert to_gemini_schema(schema) is None


def _generation_config(response_format: ResponseFormat) -> dict[str, Any]:
    request = ChatRequest(
        model="m", system="", messages=(Message("user", "x"),), response_format=response_format
    )
    return encode_request(request)["generationConfig"]


def test_unconvertible_schema_goes_as_response_json_schema() -> None:
    schema = {"oneOf": [{"type": "string"}, {"type": "integer"}]}

    config = _generation_config(ResponseFormat(kind="json_schema", schema=schema))

    assert config == {"responseMimeType": "application/json", "responseJsonSchema": schema}


def test_json_object_mode_sets_only_the_mime_type() -> None:
    assert _generation_config(ResponseFormat(kind="json_object")) == {
        "responseMimeType": "application/json"
    }
