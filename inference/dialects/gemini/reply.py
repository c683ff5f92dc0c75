"""Gemini's wire shapes of an answer: the ``GenerateContentResponse``, and its stream of
such responses, as server-sent events (``alt=sse``) or as one JSON array that grows as the
answer comes (without it, as Google's REST API answers)."""

import json
from dataclasses import dataclass
from typing import Any

from inference.dialects.gemini.errors import google_error
from inference.neutral.errors import ApiError
from inference.neutral.reply import ReplyFormat, ReplyHeader
from inference.neutral.types import (
    ChatResponse,
    Finish,
    FinishReason,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    UsageReport,
    arguments_object,
)

_FINISH_REASONS: dict[FinishReason, str] = {
    "stop": "STOP",
    "tool_calls": "STOP",
    "length": "MAX_TOKENS",
    "content_filter": "SAFETY",
}


@dataclass(frozen=True)
class GeminiReply(ReplyFormat):
    """``sse``: the stream's frames are server-sent events, else one JSON array."""

    sse: bool = True

    def body(self, header: ReplyHeader, answer: ChatResponse) -> dict[str, Any]:
        parts: list[dict[str, Any]] = [{"text": answer.text}] if answer.text else []
        parts += [_function_call(call) for call in answer.tool_calls]
        candidate = {
            "content": {"role": "model", "parts": parts or [{"text": ""}]},
            "finishReason": _FINISH_REASONS[answer.finish_reason],
            "index": 0,
        }
        return {
            "candidates": [candidate],
            "usageMetadata": usage_metadata(answer.usage),
            "modelVersion": answer.response_model or header.model,
            "responseId": header.id,
        }

    def stream(self, header: ReplyHeader) -> "GeminiFrames":
        return GeminiFrames(header, self.sse)


class GeminiFrames:
    """Text as it comes; the function calls, whole (Gemini sends each call in one part),
    with the finish reason and the usage in the last response."""

    def __init__(self, header: ReplyHeader, sse: bool) -> None:
        self.header = header
        self.sse = sse
        self.content_type = "text/event-stream" if sse else "application/json"
        self.opened = False  # a JSON array's first element went out
        self.model = header.model
        self.calls: dict[int, ToolCall] = {}  # stream index → the call so far
        self.finish = Finish("stop")
        self.usage = Usage()

    def opening(self) -> bytes:
        return b""

    def frames(self, events: list[StreamEvent]) -> bytes:
        frames: list[bytes] = []
        calls = self.calls
        for event in events:
            if isinstance(event, TextDelta) and event.text:
                frames.append(self._frame(self._response([{"text": event.text}])))
            elif isinstance(event, ToolCallDelta):
                call = calls.get(event.index, ToolCall("", "", ""))
                calls[event.index] = ToolCall(
                    event.id or call.id,
                    event.name or call.name,
                    call.arguments + event.arguments,
                    signature=event.signature or call.signature,
                )
            elif isinstance(event, Finish):
                self.finish = event
                self.model = event.response_model or self.model
            elif isinstance(event, UsageReport):
                self.usage = event.usage
        return b"".join(frames)

    async def ended(self) -> bytes:
        parts = [_function_call(call) for call in self.calls.values()]
        last = self._response(parts)
        last["candidates"][0]["finishReason"] = _FINISH_REASONS[self.finish.reason]
        last["usageMetadata"] = usage_metadata(self.usage)
        return self._frame(last) + (b"" if self.sse else b"]")

    def failed(self, error: ApiError) -> bytes:
        """Google's error object as the last response (and the array's end)."""
        _, body = google_error(error)
        return self._frame(body) + (b"" if self.sse else b"]")

    def _response(self, parts: list[dict[str, Any]]) -> dict[str, Any]:
        content = {"role": "model", "parts": parts}
        return {
            "candidates": [{"content": content, "index": 0}],
            "modelVersion": self.model,
            "responseId": self.header.id,
        }

    def _frame(self, payload: dict[str, Any]) -> bytes:
        data = json.dumps(payload, separators=(",", ":")).encode()
        if self.sse:
            return b"data: " + data + b"\r\n\r\n"
        separator = b",\r\n" if self.opened else b"["
        self.opened = True
        return separator + data


def usage_metadata(usage: Usage) -> dict[str, Any]:
    """Gemini's counts: ``candidatesTokenCount`` leaves the thoughts out, as Google counts;
    ``cost`` in USD where every call of the turn has a known price."""
    thoughts = usage.reasoning_tokens or 0
    metadata: dict[str, Any] = {
        "promptTokenCount": usage.prompt_tokens,
        "candidatesTokenCount": max(0, usage.completion_tokens - thoughts),
        "totalTokenCount": usage.total_tokens,
    }
    if usage.cached_tokens is not None:
        metadata["cachedContentTokenCount"] = usage.cached_tokens
    if usage.reasoning_tokens is not None:
        metadata["thoughtsTokenCount"] = usage.reasoning_tokens
    if usage.cost_usd is not None:
        metadata["cost"] = usage.cost_usd
    return metadata


def _function_call(call: ToolCall) -> dict[str, Any]:
    """A call as a part, with the thought signature a Gemini upstream gave it: the client
    sends it back with the call, and Gemini checks it."""
    arguments = arguments_object(call.arguments)
    part: dict[str, Any] = {"functionCall": {"id": call.id, "name": call.name, "args": arguments}}
    if call.signature:
        part["thoughtSignature"] = call.signature
    return part
