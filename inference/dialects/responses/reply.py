"""The OpenAI Responses API wire shapes of an answer: the ``response`` object and its
event stream, with sequence numbers, as the official SDK reads them."""

import base64
import json
import time
import uuid
from collections.abc import Awaitable, Callable
from typing import Any

from inference.dialects.responses.body import ResponsesIn
from inference.neutral.errors import ApiError
from inference.neutral.reply import ReplyHeader
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
)

type Keep = Callable[[dict[str, Any]], Awaitable[None]]  # stores a completed response
# A provider's opaque reasoning item (Anthropic's signed thinking block) travels to the
# client and back as a reasoning item's encrypted_content with this prefix.
_REASONING_PREFIX = "gateway-reasoning:"


def echo(body: ResponsesIn) -> dict[str, Any]:
    """The request's settings a response object repeats."""
    return {
        "instructions": body.instructions,
        "metadata": body.metadata or {},
        "parallel_tool_calls": body.parallel_tool_calls is not False,
        "temperature": body.temperature,
        "top_p": body.top_p,
        "max_output_tokens": body.max_output_tokens,
        "tool_choice": body.tool_choice or "auto",
        "tools": body.tools or [],
        "text": body.text or {"format": {"type": "text"}},
        "reasoning": {"effort": (body.reasoning or {}).get("effort"), "summary": None},
        "store": body.store is not False,
        "user": body.user,
        "safety_identifier": body.safety_identifier,
        "previous_response_id": body.previous_response_id,
        "truncation": "disabled",
    }


class ResponsesReply:
    """The ``response`` object and its event stream, repeating the request's settings;
    ``keep`` stores the completed response before it is sent; ``namespaces`` names the
    namespace tool each function came in, which its calls go back under."""

    def __init__(
        self,
        settings: dict[str, Any],
        namespaces: dict[str, str] | None = None,
        keep: Keep | None = None,
    ) -> None:
        self.settings = settings
        self.namespaces = namespaces or {}
        self.keep = keep

    def body(self, header: ReplyHeader, answer: ChatResponse) -> dict[str, Any]:
        output = [reasoning_item(item) for item in answer.reasoning if isinstance(item, dict)]
        if answer.text or not answer.tool_calls:
            logprobs = _token_logprobs(answer.logprobs)
            output.append(_message(_item_id("msg"), answer.text, "completed", logprobs=logprobs))
        output += [
            _function_call(_item_id("fc"), call, "completed", self.namespaces)
            for call in answer.tool_calls
        ]
        return _ended(header, self.settings, answer.finish_reason, output, answer.usage)

    async def finished(self, body: dict[str, Any]) -> None:
        if self.keep is not None:
            await self.keep(body)

    def stream(self, header: ReplyHeader) -> "ResponsesFrames":
        return ResponsesFrames(header, self)


class ResponsesFrames:
    content_type = "text/event-stream"

    def __init__(self, header: ReplyHeader, reply: ResponsesReply) -> None:
        self.header = header
        self.settings = reply.settings
        self.reply = reply
        self.sequence = _Sequence()
        self.output: list[dict[str, Any]] = []
        self.message_id = ""
        self.text = ""
        self.logprobs: list[Any] = []  # of the message's text, where the provider gave them
        self.calls: dict[int, dict[str, Any]] = {}  # stream index → function_call item
        self.usage: Usage | None = None
        self.finish_reason: FinishReason = "stop"

    def opening(self) -> bytes:
        """The documented event sequence begins: created, in_progress."""
        opening = _response(self.header, self.settings, "in_progress", [], None)
        sequence = self.sequence
        return sequence.frame("response.created", response=opening) + sequence.frame(
            "response.in_progress", response=opening
        )

    def frames(self, events: list[StreamEvent]) -> bytes:
        """Each output item: added, then its content."""
        sequence, output = self.sequence, self.output
        frames: list[bytes] = []
        for event in events:
            if isinstance(event, TextDelta):
                if not self.message_id:
                    frames += self._message_opened()
                self.text += event.text
                piece = _token_logprobs(event.logprobs)
                self.logprobs += piece
                frames.append(
                    sequence.frame(
                        "response.output_text.delta",
                        item_id=self.message_id,
                        output_index=_index(output, self.message_id),
                        content_index=0,
                        delta=event.text,
                        logprobs=piece,
                    )
                )
            elif isinstance(event, ToolCallDelta):
                frames += _call_event(sequence, event, self.calls, output, self.reply.namespaces)
            elif isinstance(event, UsageReport):
                self.usage = event.usage
            elif isinstance(event, Reasoning) and isinstance(event.item, dict):
                output.append(reasoning_item(event.item))
                place = {"output_index": len(output) - 1, "item": output[-1]}
                frames.append(sequence.frame("response.output_item.added", **place))
                frames.append(sequence.frame("response.output_item.done", **place))
            elif isinstance(event, Finish):
                self.finish_reason = event.reason
                if not (self.message_id or self.calls):
                    frames += self._message_opened()  # an empty answer is one empty message
        return b"".join(frames)

    async def ended(self) -> bytes:
        """Each output item done, then completed (kept first, for ``previous_response_id``)."""
        sequence, output = self.sequence, self.output
        frames: list[bytes] = []
        if self.message_id:
            frames += _message_closed(sequence, self.message_id, self.text, self.logprobs, output)
        for item in self.calls.values():
            frames += _call_closed(sequence, item, output)
        completed = _ended(self.header, self.settings, self.finish_reason, output, self.usage)
        await self.reply.finished(completed)
        frames.append(sequence.frame(f"response.{completed['status']}", response=completed))
        return b"".join(frames)

    def _message_opened(self) -> list[bytes]:
        self.message_id = _item_id("msg")
        frames = _message_opened(self.sequence, self.message_id, len(self.output))
        self.output.append(_message(self.message_id, "", "in_progress"))
        return frames

    def failed(self, error: ApiError) -> bytes:
        """``response.failed`` with the output streamed so far."""
        failed = _response(self.header, self.settings, "failed", self.output, None)
        failed["error"] = {"code": error.code or "server_error", "message": error.message}
        return self.sequence.frame("response.failed", response=failed)


class _Sequence:
    def __init__(self) -> None:
        self.number = 0

    def frame(self, kind: str, **payload: Any) -> bytes:
        data = {"type": kind, "sequence_number": self.number, **payload}
        self.number += 1
        return f"event: {kind}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


def _message_opened(sequence: _Sequence, item_id: str, index: int) -> list[bytes]:
    return [
        sequence.frame(
            "response.output_item.added",
            output_index=index,
            item=_message(item_id, "", "in_progress", with_part=False),
        ),
        sequence.frame(
            "response.content_part.added",
            item_id=item_id,
            output_index=index,
            content_index=0,
            part=_text_part(""),
        ),
    ]


def _message_closed(
    sequence: _Sequence,
    item_id: str,
    text: str,
    logprobs: list[Any],
    output: list[dict[str, Any]],
) -> list[bytes]:
    index = _index(output, item_id)
    output[index] = _message(item_id, text, "completed", logprobs=logprobs)
    place = {"item_id": item_id, "output_index": index, "content_index": 0}
    return [
        sequence.frame("response.output_text.done", **place, text=text, logprobs=logprobs),
        sequence.frame("response.content_part.done", **place, part=_text_part(text, logprobs)),
        sequence.frame("response.output_item.done", output_index=index, item=output[index]),
    ]


def _call_event(
    sequence: _Sequence,
    delta: ToolCallDelta,
    calls: dict[int, dict[str, Any]],
    output: list[dict[str, Any]],
    namespaces: dict[str, str],
) -> list[bytes]:
    frames = []
    item = calls.get(delta.index)
    if item is None:
        call = ToolCall(id=delta.id or _item_id("call"), name=delta.name or "", arguments="")
        item = calls[delta.index] = _function_call(_item_id("fc"), call, "in_progress", namespaces)
        output.append(item)
        frames.append(
            sequence.frame("response.output_item.added", output_index=len(output) - 1, item=item)
        )
    if delta.arguments:
        item["arguments"] += delta.arguments
        frames.append(
            sequence.frame(
                "response.function_call_arguments.delta",
                item_id=item["id"],
                output_index=_index(output, item["id"]),
                delta=delta.arguments,
            )
        )
    return frames


def _call_closed(
    sequence: _Sequence, item: dict[str, Any], output: list[dict[str, Any]]
) -> list[bytes]:
    index = _index(output, item["id"])
    item["status"] = "completed"
    return [
        sequence.frame(
            "response.function_call_arguments.done",
            item_id=item["id"],
            output_index=index,
            name=item["name"],
            arguments=item["arguments"],
        ),
        sequence.frame("response.output_item.done", output_index=index, item=item),
    ]


def _response(
    header: ReplyHeader,
    settings: dict[str, Any],
    status: str,
    output: list[dict[str, Any]],
    usage: Usage | None,
) -> dict[str, Any]:
    return {
        "id": header.id,
        "object": "response",
        "created_at": header.created,
        "completed_at": int(time.time()) if status == "completed" else None,
        "status": status,
        "error": None,
        "incomplete_details": None,
        "model": header.model,
        "output": output,
        **settings,
        "usage": _usage(usage) if usage is not None else None,
    }


def _ended(
    header: ReplyHeader,
    settings: dict[str, Any],
    finish_reason: FinishReason,
    output: list[dict[str, Any]],
    usage: Usage | None,
) -> dict[str, Any]:
    """The response once its answer ended: ``incomplete`` when a content filter (a
    guardrail) stopped it, else ``completed``."""
    if finish_reason != "content_filter":
        return _response(header, settings, "completed", output, usage)
    response = _response(header, settings, "incomplete", output, usage)
    response["incomplete_details"] = {"reason": "content_filter"}
    return response


def _usage(usage: Usage) -> dict[str, Any]:
    body: dict[str, Any] = {
        "input_tokens": usage.prompt_tokens,
        "input_tokens_details": {
            "cached_tokens": usage.cached_tokens or 0,
            "cache_write_tokens": usage.cache_write_tokens or 0,
        },
        "output_tokens": usage.completion_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens or 0},
        "total_tokens": usage.total_tokens,
    }
    if usage.cost_usd is not None:
        body["cost"] = usage.cost_usd
    return body


def _message(
    item_id: str,
    text: str,
    status: str,
    with_part: bool = True,
    logprobs: list[Any] | None = None,
) -> dict[str, Any]:
    return {
        "id": item_id,
        "type": "message",
        "role": "assistant",
        "status": status,
        "content": [_text_part(text, logprobs or [])] if with_part else [],
    }


def _text_part(text: str, logprobs: list[Any] | None = None) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": [], "logprobs": logprobs or []}


def _token_logprobs(logprobs: Any) -> list[Any]:
    """The per-token list of a chat ``logprobs`` object (its ``content``), which is the
    shape of an ``output_text``'s logprobs."""
    content = logprobs.get("content") if isinstance(logprobs, dict) else None
    return content if isinstance(content, list) else []


def _function_call(
    item_id: str, call: ToolCall, status: str, namespaces: dict[str, str]
) -> dict[str, Any]:
    item = {
        "id": item_id,
        "type": "function_call",
        "call_id": call.id,
        "name": call.name,
        "arguments": call.arguments,
        "status": status,
    }
    if (namespace := namespaces.get(call.name)) is not None:
        item["namespace"] = namespace
    return item


def reasoning_item(block: dict[str, Any]) -> dict[str, Any]:
    """A reasoning output item carrying a provider's reasoning block: its text as the
    summary, the whole block (signature included) as ``encrypted_content``."""
    packed = base64.b64encode(json.dumps(block).encode()).decode()
    thinking = block.get("thinking")
    return {
        "id": _item_id("rs"),
        "type": "reasoning",
        "summary": [{"type": "summary_text", "text": thinking}] if thinking else [],
        "encrypted_content": _REASONING_PREFIX + packed,
        "status": "completed",
    }


def reasoning_block(item: dict[str, Any]) -> dict[str, Any] | None:
    """The reasoning block a client sent back in a reasoning item the gateway made (None
    for any other reasoning item: OpenAI's own cannot go to another provider)."""
    content = item.get("encrypted_content")
    if not isinstance(content, str) or not content.startswith(_REASONING_PREFIX):
        return None
    try:
        block = json.loads(base64.b64decode(content.removeprefix(_REASONING_PREFIX)))
    except ValueError:
        return None
    return block if isinstance(block, dict) else None


def _item_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


def _index(output: list[dict[str, Any]], item_id: str) -> int:
    return next(index for index, item in enumerate(output) if item["id"] == item_id)
