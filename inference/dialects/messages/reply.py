"""The Anthropic Messages API wire shapes of an answer: the ``message`` object and its
event stream (``message_start``, content blocks, ``message_delta``, ``message_stop``), as
the Anthropic SDKs and Claude Code read them."""

import json
from typing import Any

from inference.dialects.messages.errors import anthropic_error
from inference.neutral.errors import ApiError
from inference.neutral.reply import ReplyFormat, ReplyHeader
from inference.neutral.types import (
    ChatResponse,
    Finish,
    FinishReason,
    Reasoning,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    UsageReport,
    arguments_object,
)

_STOP_REASONS: dict[FinishReason, str] = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "content_filter": "refusal",
}


class MessagesReply(ReplyFormat):
    """``message`` and its event stream."""

    def body(self, header: ReplyHeader, answer: ChatResponse) -> dict[str, Any]:
        content: list[dict[str, Any]] = [
            block for block in answer.reasoning if isinstance(block, dict)
        ]
        if answer.text or not answer.tool_calls:
            content.append({"type": "text", "text": answer.text})
        content += [_tool_use(call) for call in answer.tool_calls]
        return {
            **_message(header),
            "content": content,
            "stop_reason": _stop_reason(answer.finish_reason, answer.by_stop_sequence),
            "usage": usage(answer.usage),
        }

    def stream(self, header: ReplyHeader) -> "MessagesFrames":
        return MessagesFrames(header)


class MessagesFrames:
    """Content blocks one after the other: a block ends when one of another kind (or
    another tool call) begins. Tool calls come after the text whatever order the
    provider's stream has them in: a call's fragments are held until the text is over
    (the stream's end, or a call once text has come)."""

    content_type = "text/event-stream"

    def __init__(self, header: ReplyHeader) -> None:
        self.header = header
        self.index = -1  # of the open block
        self.open: str | None = None  # "text", or the open tool call's stream index
        self.held: list[ToolCallDelta] = []  # calls that came before the text ended
        self.texted = False  # a text block has been opened
        self.finish = Finish("stop")
        self.totals = Usage()

    def opening(self) -> bytes:
        opening = {**_message(self.header), "content": [], "stop_reason": None}
        opening["usage"] = usage(Usage(cost_micro_usd=None))  # no cost known yet
        return _frame("message_start", message=opening)

    def frames(self, events: list[StreamEvent]) -> bytes:
        frames: list[bytes] = []
        for event in events:
            if isinstance(event, TextDelta) and event.text:
                self.texted = True
                frames += self._begin("text", {"type": "text", "text": ""})
                delta = {"type": "text_delta", "text": event.text}
                frames.append(_frame("content_block_delta", index=self.index, delta=delta))
            elif isinstance(event, ToolCallDelta) and not self.texted:
                self.held.append(event)  # text may still come: it goes first
            elif isinstance(event, ToolCallDelta):
                frames += [*self._released(), *self._tool_call(event)]
            elif isinstance(event, Reasoning) and isinstance(event.item, dict):
                frames += self._thinking(event.item)
            elif isinstance(event, Finish):
                self.finish = event
            elif isinstance(event, UsageReport):
                self.totals = event.usage
        return b"".join(frames)

    async def ended(self) -> bytes:
        frames: list[bytes] = []
        if self.index < 0 and not self.held:  # an empty answer is one empty text block
            frames += self._begin("text", {"type": "text", "text": ""})
        frames += [*self._released(), *self._end()]
        finish = self.finish
        reason = _stop_reason(finish.reason, finish.by_stop_sequence)
        ending = {"stop_reason": reason, "stop_sequence": None}
        frames.append(_frame("message_delta", delta=ending, usage=usage(self.totals)))
        frames.append(_frame("message_stop"))
        return b"".join(frames)

    def failed(self, error: ApiError) -> bytes:
        _, body = anthropic_error(error)
        return _event("error", body)

    def _released(self) -> list[bytes]:
        """The frames of the tool calls held back."""
        frames = [frame for held in self.held for frame in self._tool_call(held)]
        self.held = []
        return frames

    def _begin(self, kind: str, block: dict[str, Any]) -> list[bytes]:
        if self.open == kind:
            return []
        frames = self._end()
        self.index += 1
        self.open = kind
        frames.append(_frame("content_block_start", index=self.index, content_block=block))
        return frames

    def _end(self) -> list[bytes]:
        if self.open is None:
            return []
        self.open = None
        return [_frame("content_block_stop", index=self.index)]

    def _tool_call(self, delta: ToolCallDelta) -> list[bytes]:
        frames = []
        if delta.id is not None or self.open != f"call {delta.index}":
            block: dict[str, Any] = {
                "type": "tool_use",
                "id": delta.id,
                "name": delta.name,
                "input": {},
            }
            frames += self._begin(f"call {delta.index}", block)
        if delta.arguments:
            piece = {"type": "input_json_delta", "partial_json": delta.arguments}
            frames.append(_frame("content_block_delta", index=self.index, delta=piece))
        return frames

    def _thinking(self, block: dict[str, Any]) -> list[bytes]:
        """A thinking block arrives whole (with its signature): started, told, ended."""
        if block.get("type") != "thinking":
            return [*self._begin("redacted", block), *self._end()]
        frames = self._begin("thinking", {"type": "thinking", "thinking": "", "signature": ""})
        for key in ("thinking", "signature"):
            if block.get(key):
                delta = {"type": f"{key}_delta", key: block[key]}
                frames.append(_frame("content_block_delta", index=self.index, delta=delta))
        return [*frames, *self._end()]


def _stop_reason(reason: FinishReason, by_stop_sequence: bool) -> str:
    return "stop_sequence" if reason == "stop" and by_stop_sequence else _STOP_REASONS[reason]


def usage(usage: Usage) -> dict[str, Any]:
    """Anthropic's usage: ``input_tokens`` is the prompt's uncached rest; ``cost`` in USD
    where every call of the turn has a known price, as on the other dialects."""
    cached, written = usage.cached_tokens or 0, usage.cache_write_tokens or 0
    counts: dict[str, Any] = {
        "input_tokens": max(0, usage.prompt_tokens - cached - written),
        "output_tokens": usage.completion_tokens,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": cached,
    }
    if usage.cost_usd is not None:
        counts["cost"] = usage.cost_usd
    return counts


def _message(header: ReplyHeader) -> dict[str, Any]:
    return {
        "id": header.id,
        "type": "message",
        "role": "assistant",
        "model": header.model,
        "stop_sequence": None,
    }


def _tool_use(call: ToolCall) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": call.id,
        "name": call.name,
        "input": arguments_object(call.arguments),
    }


def _frame(kind: str, **payload: Any) -> bytes:
    return _event(kind, {"type": kind, **payload})


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()
