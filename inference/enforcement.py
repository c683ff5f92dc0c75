"""Enforcing ``response_format`` on the reply (DESIGN 4.4).

A reply is valid when, with one surrounding code fence stripped, it parses as JSON the
schema accepts (an object, for ``json_object``). An invalid reply goes back to the model
with the validation errors as a new user turn, up to ``max_repairs`` times, and usage is
summed over every attempt; still invalid is a 502. A streaming client gets the validated
JSON replayed as chunks, so nothing reaches it before the reply is known to be good.
"""

import json
import re
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import replace
from typing import Any

from inference.providers.base import Provider, ProviderError
from inference.providers.types import (
    ChatRequest,
    ChatResponse,
    Finish,
    Message,
    ResponseFormat,
    StreamEvent,
    TextDelta,
    Usage,
    UsageReport,
)
from inference.structured import schema_validator

_FENCE = re.compile(r"\A\s*```[^\n`]*\n(?P<body>.*?)\n?```\s*\Z", re.DOTALL)
_REPORTED_ERRORS = 5
_REPLAY_CHUNK = 40

Call = Callable[[ChatRequest], Awaitable[ChatResponse]]


async def complete(provider: Provider, request: ChatRequest, max_repairs: int) -> ChatResponse:
    if request.response_format is None:
        return await provider.complete(request)
    return await enforce(provider.complete, request, request.response_format, max_repairs)


def stream(
    provider: Provider, request: ChatRequest, max_repairs: int
) -> AsyncIterator[StreamEvent]:
    if request.response_format is None:
        return provider.stream(request)
    return _replay(provider, request, max_repairs)


async def enforce(
    call: Call, request: ChatRequest, response_format: ResponseFormat, max_repairs: int
) -> ChatResponse:
    spent = Usage()
    for attempt in range(max_repairs + 1):
        try:
            reply = await call(request)
        except ProviderError as error:
            error.usage = spent + error.usage
            raise
        spent = spent + reply.usage
        text = strip_fence(reply.text)
        errors = validation_errors(text, response_format)
        if not errors:
            return replace(reply, text=text, usage=spent)
        if attempt < max_repairs:
            request = with_repair_turn(request, reply.text, errors)
    raise ProviderError(
        502,
        f"The model's reply did not match response_format after {max_repairs} repair "
        f"attempt(s): {'; '.join(errors)}",
        code="structured_output_invalid",
        usage=spent,
    )


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


async def _replay(
    provider: Provider, request: ChatRequest, max_repairs: int
) -> AsyncIterator[StreamEvent]:
    response = await complete(provider, request, max_repairs)
    # Usage first: a client that leaves during the replay is billed what was really spent.
    yield UsageReport(response.usage)
    for start in range(0, len(response.text), _REPLAY_CHUNK):
        yield TextDelta(response.text[start : start + _REPLAY_CHUNK])
    yield Finish(response.finish_reason)
