"""The OpenAI chat-completions wire shapes of an answer: the ``chat.completion`` object and
the ``chat.completion.chunk`` stream."""

from typing import Any

from core import fastjson
from inference.neutral.errors import ApiError
from inference.neutral.reply import ReplyFormat, ReplyHeader
from inference.neutral.types import (
    ChatResponse,
    Finish,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    UsageReport,
)
from inference.serving.errors import openai_error

_DONE = b"data: [DONE]\n\n"


class ChatCompletionReply(ReplyFormat):
    """``chat.completion`` and its chunk stream."""

    def body(self, header: ReplyHeader, answer: ChatResponse) -> dict[str, Any]:
        message: dict[str, Any] = {
            "role": "assistant",
            "content": answer.text if answer.text or not answer.tool_calls else None,
            "refusal": None,
        }
        if answer.tool_calls:
            message["tool_calls"] = [_tool_call(call) for call in answer.tool_calls]
        return {
            "id": header.id,
            "object": "chat.completion",
            "created": header.created,
            "model": header.model,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": answer.finish_reason,
                    "logprobs": answer.logprobs,
                }
            ],
            "usage": usage_body(answer.usage),
        }

    def stream(self, header: ReplyHeader) -> "ChatCompletionFrames":
        return ChatCompletionFrames(header)


class ChatCompletionFrames:
    content_type = "text/event-stream"

    def __init__(self, header: ReplyHeader) -> None:
        self.header = header
        # Every chunk opens with the same envelope: encoded once, not for every event.
        self._opening = b"data: " + fastjson.dumps(_envelope(header))[:-1] + b',"choices":['

    def opening(self) -> bytes:
        """The role's chunk."""
        return self._chunk({"role": "assistant", "content": ""})

    def frames(self, events: list[StreamEvent]) -> bytes:
        """SSE frames: the content and tool-call deltas, the finish, the usage (when asked
        for)."""
        header = self.header
        frames: list[bytes] = []
        for event in events:
            if isinstance(event, TextDelta):
                frames.append(self._chunk({"content": event.text}, logprobs=event.logprobs))
            elif isinstance(event, ToolCallDelta):
                frames.append(self._chunk({"tool_calls": [_tool_call_delta(event)]}))
            elif isinstance(event, Finish):
                frames.append(self._chunk({}, finish_reason=event.reason))
            elif isinstance(event, UsageReport) and header.include_usage:
                usage = usage_body(event.usage)
                frames.append(_frame({**_envelope(header), "choices": [], "usage": usage}))
        return b"".join(frames)

    async def ended(self) -> bytes:
        return _DONE

    def failed(self, error: ApiError) -> bytes:
        """The error object as a last frame (the status line is long gone)."""
        return _frame(openai_error(error)[1])

    def _chunk(
        self, delta: dict[str, Any], finish_reason: str | None = None, logprobs: Any = None
    ) -> bytes:
        """The frame of a ``chat.completion.chunk`` with one choice."""
        choice = {"index": 0, "delta": delta, "finish_reason": finish_reason, "logprobs": logprobs}
        return self._opening + fastjson.dumps(choice) + b"]}\n\n"


def usage_body(usage: Usage) -> dict[str, Any]:
    """The counts, their details where the provider reported them, and the cost in USD
    where every call of the turn has a known price."""
    body: dict[str, Any] = {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }
    details = {
        name: count
        for name, count in (
            ("cached_tokens", usage.cached_tokens),
            ("cache_write_tokens", usage.cache_write_tokens),
        )
        if count is not None
    }
    if details:
        body["prompt_tokens_details"] = details
    if usage.reasoning_tokens is not None:
        body["completion_tokens_details"] = {"reasoning_tokens": usage.reasoning_tokens}
    if usage.cost_usd is not None:
        body["cost"] = usage.cost_usd
    return body


def _tool_call(call: ToolCall) -> dict[str, Any]:
    return {
        "id": call.id,
        "type": "function",
        "function": {"name": call.name, "arguments": call.arguments},
    }


def _tool_call_delta(delta: ToolCallDelta) -> dict[str, Any]:
    """The first fragment of a call carries its id, type and name; later ones only add
    to its arguments."""
    fragment: dict[str, Any] = {"index": delta.index}
    if delta.id is not None:
        fragment["id"] = delta.id
        fragment["type"] = "function"
    function: dict[str, Any] = {"arguments": delta.arguments}
    if delta.name is not None:
        function["name"] = delta.name
    fragment["function"] = function
    return fragment


def _envelope(header: ReplyHeader) -> dict[str, Any]:
    return {
        "id": header.id,
        "object": "chat.completion.chunk",
        "created": header.created,
        "model": header.model,
    }


def _frame(payload: dict[str, Any]) -> bytes:
    return b"data: " + fastjson.dumps(payload) + b"\n\n"
