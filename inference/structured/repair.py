"""Checking a reply against ``response_format`` and asking for a repair (docs/api.md, "Structured output").

A reply is valid when, with one surrounding code fence stripped, it parses as JSON the
schema accepts (an object, for ``json_object``). The tool loop sends an invalid reply
back with these errors as a new user turn, up to ``structured_output.max_repairs`` times.
"""

import json
import re
from dataclasses import replace
from typing import Any

from inference.neutral.schemas import schema_validator
from inference.neutral.types import ChatRequest, Message, ResponseFormat

_FENCE = re.compile(r"\A\s*```[^\n`]*\n(?P<body>.*?)\n?```\s*\Z", re.DOTALL)
_REPORTED_ERRORS = 5


def strip_fence(text: str) -> str:
    match = _FENCE.match(text)
    return match.group("body").strip() if match else text.strip()


def validation_errors(text: str, response_format: ResponseFormat) -> list[str]:
    try:
        value = json.loads(text)
    except ValueError as error:
        return [f"the reply is not valid JSON ({error})"]
    if response_format.schema is None:
        return [] if isinstance(value, dict) else ["the reply is JSON but not an object"]
    validator = schema_validator(response_format.schema)
    found = sorted(validator.iter_errors(value), key=lambda error: list(error.absolute_path))
    return [_describe(error.absolute_path, error.message) for error in found[:_REPORTED_ERRORS]]


def _describe(path: Any, message: str) -> str:
    location = "/".join(str(part) for part in path) or "(root)"
    return f"at {location}: {message}"


def with_repair_turn(request: ChatRequest, reply: str, errors: list[str]) -> ChatRequest:
    problems = "\n".join(f"- {error}" for error in errors)
    repair = (
        "Your previous reply does not satisfy the required JSON format:\n"
        f"{problems}\n"
        "Reply again with only the corrected JSON: no prose, no code fence."
    )
    messages = (
        *request.messages,
        Message(role="assistant", content=reply),
        Message(role="user", content=repair),
    )
    return replace(request, messages=messages)
