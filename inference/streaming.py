"""SSE delivery of a completion in OpenAI's ``chat.completion.chunk`` format (DESIGN 3).

The upstream stream is opened and its first event awaited before any byte is sent, so
a provider that refuses the call still gets the client a proper HTTP error status.
After that, a failure becomes a final ``data: {"error": …}`` frame. A client that goes
away cancels the generator at its current ``await``: the upstream connection is closed
and what was generated so far is still billed and stored.
"""

import asyncio
import json
import logging
from collections.abc import AsyncIterator
from typing import Any

from core.requestlog import RequestLog
from inference.errors import ApiError
from inference.pipeline import Turn, billed_usage, record_turn, usage_body
from inference.providers.base import ProviderError
from inference.providers.types import StreamAccumulator, StreamEvent, TextDelta, Usage

_DONE = b"data: [DONE]\n\n"
_INTERNAL_ERROR = ApiError(
    500, "The gateway failed while streaming the reply", code="internal_error"
)
logger = logging.getLogger("gateway.inference")


async def open_stream(
    turn: Turn, events: AsyncIterator[StreamEvent], log: RequestLog
) -> AsyncIterator[bytes]:
    try:
        first = await anext(events, None)
    except BaseException:
        await events.aclose()  # type: ignore[attr-defined]
        raise
    return _frames(turn, first, events, log)


async def _frames(
    turn: Turn, first: StreamEvent | None, events: AsyncIterator[StreamEvent], log: RequestLog
) -> AsyncIterator[bytes]:
    accumulator = StreamAccumulator()
    failed = False
    try:
        yield _frame(_chunk(turn, {"role": "assistant", "content": ""}))
        pending = [first] if first is not None else []
        while True:
            event = pending.pop() if pending else await anext(events, None)
            if event is None:
                break
            accumulator.add(event)
            if isinstance(event, TextDelta) and event.text:
                yield _frame(_chunk(turn, {"content": event.text}))
        yield _frame(_chunk(turn, {}, finish_reason=accumulator.finish_reason))
        if turn.include_usage:
            usage = billed_usage(turn, "".join(accumulator.text), accumulator.usage)
            yield _frame({**_envelope(turn), "choices": [], "usage": usage_body(usage)})
        yield _DONE
    except ProviderError as error:
        failed = True
        log.error = error.code
        yield _frame(ApiError(error.status, error.message, code=error.code).body())
    except Exception:
        # Headers are sent: only a final error frame can still tell the client.
        failed = True
        log.error = "internal_error"
        logger.exception("stream %s failed", turn.completion_id)
        yield _frame(_INTERNAL_ERROR.body())
    finally:
        await events.aclose()  # type: ignore[attr-defined]
        reply = "".join(accumulator.text)
        usage = billed_usage(turn, reply, accumulator.usage)
        log.tokens = usage.total_tokens
        # A reply cut by a failure is billed but not remembered; one cut by the client (a
        # cancellation, not an Exception) is both (DESIGN 4.2). Shielded: a disconnect
        # cancels this generator, but the bill must be written.
        await asyncio.shield(_record_after_stream(turn, usage, None if failed else reply))


async def _record_after_stream(turn: Turn, usage: Usage, reply: str | None) -> None:
    try:
        await record_turn(turn, usage, reply)
    except Exception:
        # The client already has its answer; an error escaping here would leave it hanging.
        logger.exception("could not record stream %s", turn.completion_id)


def _envelope(turn: Turn) -> dict[str, Any]:
    return {
        "id": turn.completion_id,
        "object": "chat.completion.chunk",
        "created": turn.created,
        "model": turn.requested_model,
    }


def _chunk(turn: Turn, delta: dict[str, Any], finish_reason: str | None = None) -> dict[str, Any]:
    choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": None}
    return {**_envelope(turn), "choices": [choice]}


def _frame(payload: dict[str, Any]) -> bytes:
    return b"data: " + json.dumps(payload, separators=(",", ":")).encode() + b"\n\n"
