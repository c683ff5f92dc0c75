"""JSON Schema → Gemini's ``responseSchema`` (its OpenAPI 3.0 subset).

Gemini rejects keys outside that subset, so annotations and constraints it lacks
(``additionalProperties``, ``$schema``, …) are dropped: the gateway validates the reply
against the full schema anyway. Schemas whose meaning the subset cannot carry
(references, ``allOf``/``oneOf``, mixed type unions, non-string enums) are not
converted; the caller sends them as ``responseJsonSchema`` instead.
"""

from typing import Any

_KEPT = {
    "format",
    "title",
    "description",
    "nullable",
    "minItems",
    "maxItems",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "minimum",
    "maximum",
    "required",
    "propertyOrdering",
}
_UNCONVERTIBLE = {
    "$ref",
    "$defs",
    "definitions",
    "allOf",
    "oneOf",
    "not",
    "if",
    "then",
    "else",
    "const",
    "patternProperties",
    "prefixItems",
    "contains",
    "dependentSchemas",
}


class Unconvertible(Exception):
    pass


def to_gemini_schema(schema: dict[str, Any]) -> dict[str, Any] | None:
    try:
        return _convert(schema)
    except Unconvertible:
        return None


def _convert(schema: Any) -> dict[str, Any]:
    if not isinstance(schema, dict) or _UNCONVERTIBLE & schema.keys():
        raise Unconvertible
    converted = {key: value for key, value in schema.items() if key in _KEPT}
    if "type" in schema:
        converted.update(_type(schema["type"]))
    if "enum" in schema:
        if not all(isinstance(value, str) for value in schema["enum"]):
            raise Unconvertible
        converted["enum"] = list(schema["enum"])
    if "properties" in schema:
        converted["properties"] = {
            name: _convert(value) for name, value in schema["properties"].items()
        }
    if "items" in schema:
        converted["items"] = _convert(schema["items"])
    if "anyOf" in schema:
        converted["anyOf"] = [_convert(option) for option in schema["anyOf"]]
    return converted


def _type(value: Any) -> dict[str, Any]:
    types = [value] if isinstance(value, str) else list(value)
    concrete = [name for name in types if name != "null"]
    if len(concrete) != 1 or not isinstance(concrete[0], str):
        raise Unconvertible
    converted: dict[str, Any] = {"type": concrete[0].upper()}
    if len(concrete) < len(types):
        converted["nullable"] = True
    return converted
