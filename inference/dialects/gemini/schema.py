"""Gemini's ``Schema`` (its OpenAPI 3.0 subset, types in upper case: ``OBJECT``,
``STRING``) as the JSON Schema the gateway checks and every provider takes. Gemini CLI's
router asks with such schemas; SDKs may spell keys in snake case. Its JSON Schema fields
(``responseJsonSchema``, ``parametersJsonSchema``) are JSON Schema, but Google takes the
upper-case type names there too, and Gemini CLI sends them."""

from typing import Any

_RENAMED = {
    "any_of": "anyOf",
    "max_items": "maxItems",
    "min_items": "minItems",
    "max_length": "maxLength",
    "min_length": "minLength",
    "max_properties": "maxProperties",
    "min_properties": "minProperties",
}
_DROPPED = {"propertyOrdering", "property_ordering", "nullable"}
_JSON_TYPES = {"object", "array", "string", "number", "integer", "boolean", "null"}


def json_schema(schema: Any) -> Any:
    """``schema`` with Gemini's spellings made JSON Schema's (anything else as it is)."""
    if isinstance(schema, list):
        return [json_schema(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    converted: dict[str, Any] = {}
    for key, value in schema.items():
        name = _RENAMED[key] if key in _RENAMED else str(key)
        if name in _DROPPED:
            continue
        if name == "type" and isinstance(value, str):
            converted["type"] = _type(value, schema.get("nullable") is True)
        elif name == "properties" and isinstance(value, dict):
            converted["properties"] = {field: json_schema(item) for field, item in value.items()}
        else:
            converted[name] = json_schema(value)
    return converted


def _type(value: str, nullable: bool) -> str | list[str]:
    name = value.lower()
    return [name, "null"] if nullable and name != "null" else name


def lower_case_types(schema: Any) -> Any:
    """A JSON Schema with type names in upper case (``"OBJECT"``) in JSON Schema's case;
    nothing else changes."""
    if isinstance(schema, list):
        return [lower_case_types(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    return {
        key: _json_type(value) if key == "type" else lower_case_types(value)
        for key, value in schema.items()
    }


def _json_type(value: Any) -> Any:
    if isinstance(value, list):
        return [_json_type(item) for item in value]
    if isinstance(value, str) and value.lower() in _JSON_TYPES:
        return value.lower()
    return lower_case_types(value)
