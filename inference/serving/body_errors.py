"""A request body that does not fit the schema, as one 400 naming the field the client sent.

pydantic names the tried member of a union in an error's location (``input.str``,
``messages.0.content.list[ContentPart].0``): those tags are left out of ``param``. When
every member of a union failed at the same place, the message lists what the field may
be; otherwise the error of the member that got furthest is the one that explains.
"""

import re
from typing import Any

from agents.loader import format_path, is_union_tag
from inference.neutral.errors import ApiError, invalid_request

# What a value must be, by pydantic's error type.
_EXPECTED = {
    "string_type": "a string",
    "list_type": "a list",
    "dict_type": "an object",
    "model_type": "an object",
    "model_attributes_type": "an object",
    "int_type": "an integer",
    "int_parsing": "an integer",
    "float_type": "a number",
    "float_parsing": "a number",
    "bool_type": "a boolean",
    "bool_parsing": "a boolean",
}
_MODEL_NAME = re.compile(r" or instance of \w+")


def body_error(errors: list[dict[str, Any]], required: str) -> ApiError:
    """The 400 for pydantic's ``errors``; ``required`` names the fields a body needs."""
    located = [(_location(error), error) for error in errors]
    location, first = max(located, key=lambda pair: len(pair[0]))
    if not location:
        return _invalid(f"The request body must be a JSON object with at least {required}", None)
    param = format_path(location)
    if first.get("type") == "missing":
        return _invalid(f"{param} is required", param)
    alike = [error for place, error in located if place == location]
    expected = [_EXPECTED[error["type"]] for error in alike if error["type"] in _EXPECTED]
    if len(alike) > 1 and len(expected) == len(alike):
        return _invalid(f"{param} must be {' or '.join(dict.fromkeys(expected))}", param)
    if first["type"] in _EXPECTED:
        return _invalid(f"{param} must be {_EXPECTED[first['type']]}", param)
    return _invalid(f"{param}: {_MODEL_NAME.sub('', first['msg'])}", param)


def _location(error: dict[str, Any]) -> tuple[str | int, ...]:
    return tuple(
        part for part in error["loc"] if part not in ("body", "payload") and not is_union_tag(part)
    )


def _invalid(message: str, param: str | None) -> ApiError:
    return invalid_request(message, param=param, code="invalid_type")
