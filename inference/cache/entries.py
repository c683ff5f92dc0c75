"""A kept reply as the cache stores it (JSON in ``CachedReply.reply``), and the replies it
keeps: complete ones only."""

import uuid
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from core import fastjson
from inference.neutral.calls import Answerer
from inference.neutral.types import ChatRequest, ChatResponse, ToolCall, Usage
from inference.structured.repair import strip_fence, validation_errors


@dataclass(frozen=True)
class Entry:
    """A reply as it was first answered (its usage priced), who answered it, when, and
    the last user message it answered (what the semantic gate compares; empty for
    entries kept before it was stored)."""

    reply: ChatResponse
    answered_by: Answerer | None
    created_at: datetime
    question: str = ""

    def age(self, now: datetime) -> int:
        return max(0, int((now - self.created_at).total_seconds()))

    def replayed(self) -> ChatResponse:
        """The reply to answer a hit with: nothing spent, and tool calls under new ids (an
        id names one call; the client's follow-up goes with these)."""
        calls = tuple(replace(call, id=_new_id(call.id)) for call in self.reply.tool_calls)
        return replace(self.reply, usage=Usage(), tool_calls=calls)


def storable(request: ChatRequest, reply: ChatResponse) -> bool:
    """Complete replies only: not cut at the token limit or filtered, none asked with
    logprobs (a hit has none), and a structured reply only once it validates."""
    if reply.finish_reason not in ("stop", "tool_calls") or request.sampling.logprobs:
        return False
    if request.response_format is None or reply.tool_calls:
        return True
    return not validation_errors(strip_fence(reply.text), request.response_format)


def dumps(entry: Entry) -> str:
    reply, usage = entry.reply, entry.reply.usage
    return fastjson.dumps(
        {
            "text": reply.text,
            "finish_reason": reply.finish_reason,
            "tool_calls": [
                [call.id, call.name, call.arguments, call.signature] for call in reply.tool_calls
            ],
            "reasoning": list(reply.reasoning),
            "response_id": reply.response_id,
            "response_model": reply.response_model,
            "by_stop_sequence": reply.by_stop_sequence,
            "usage": [
                usage.prompt_tokens,
                usage.completion_tokens,
                usage.cached_tokens,
                usage.reasoning_tokens,
                usage.cache_write_tokens,
                usage.cost_micro_usd,
            ],
            "answered_by": [entry.answered_by.provider, entry.answered_by.model]
            if entry.answered_by is not None
            else None,
            "created_at": entry.created_at.timestamp(),
            "question": entry.question,
        }
    ).decode()


def loads(text: str) -> Entry:
    data: dict[str, Any] = fastjson.loads(text)
    answered_by = data["answered_by"]
    reply = ChatResponse(
        text=data["text"],
        finish_reason=data["finish_reason"],
        usage=Usage(*data["usage"]),
        tool_calls=tuple(ToolCall(*call) for call in data["tool_calls"]),
        reasoning=tuple(data["reasoning"]),
        response_id=data["response_id"],
        response_model=data["response_model"],
        by_stop_sequence=data["by_stop_sequence"],
    )
    created_at = datetime.fromtimestamp(data["created_at"], UTC)
    answerer = Answerer(*answered_by) if answered_by else None
    return Entry(reply, answerer, created_at, data.get("question", ""))


def _new_id(old: str) -> str:
    """A fresh id in the old one's style (``call_…``, ``toolu_…``)."""
    prefix = old.split("_", 1)[0] if "_" in old else "call"
    return f"{prefix}_{uuid.uuid4().hex[:24]}"
