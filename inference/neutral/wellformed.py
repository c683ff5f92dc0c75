"""Refusing text that cannot leave the gateway: a lone surrogate (``"\\ud800"`` in JSON)
parses into a Python string but cannot be encoded as UTF-8, so the database, the log
and every provider would fail on it later. It is a 400 naming the field instead."""

import json
from typing import Any

import orjson

from agents.loader import format_path
from inference.neutral.errors import invalid_request


def reject_lone_surrogates(data: Any) -> None:
    """400 naming the first field of ``data`` (a parsed body) whose text has a lone
    surrogate, in a key or a value."""
    if _encodes(data):
        return
    location = _first_surrogate(data, ())
    param = format_path(location) if location else None
    raise invalid_request(
        f"{param or 'the request body'} contains a lone UTF-16 surrogate, which is not valid "
        "Unicode text",
        param=param,
        code="invalid_unicode",
    )


def has_lone_surrogate(text: str) -> bool:
    try:
        text.encode()
    except UnicodeEncodeError:
        return True
    return False


def _encodes(data: Any) -> bool:
    """Whether every string in ``data`` (JSON values) is valid Unicode: the quick check,
    in C, before looking for where the surrogate is. orjson refuses surrogates; what else
    it cannot encode (an integer beyond 64 bits) gets the stdlib's slower check."""
    try:
        orjson.dumps(data)
    except orjson.JSONEncodeError:
        pass
    else:
        return True
    try:
        json.dumps(data, ensure_ascii=False).encode()
    except UnicodeEncodeError:
        return False
    return True


def _first_surrogate(value: Any, where: tuple[str | int, ...]) -> tuple[str | int, ...] | None:
    if isinstance(value, str):
        return where if has_lone_surrogate(value) else None
    if isinstance(value, dict):
        for key, item in value.items():
            if isinstance(key, str) and has_lone_surrogate(key):
                return where
            found = _first_surrogate(item, (*where, key))
            if found is not None:
                return found
    if isinstance(value, list | tuple):
        for index, item in enumerate(value):
            found = _first_surrogate(item, (*where, index))
            if found is not None:
                return found
    return None
