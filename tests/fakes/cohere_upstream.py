"""A fake of Cohere's v2 chat API (``POST /v2/chat``, JSON or an SSE event stream)."""

import json
import re
from collections.abc import Iterator
from typing import Any

from tests.fakes.base import FakeUpstream, Recorded, Reply, fake_vector, sse
from tests.fakes.openai_upstream import tool_calls_json, unanswered_tool_calls

TOOL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")

_FINISH_REASONS = {"stop": "COMPLETE", "tool_calls": "TOOL_CALL", "length": "MAX_TOKENS"}


class CohereUpstream(FakeUpstream):
    def next_reply(self, recorded: Recorded) -> Reply:
        reply = super().next_reply(recorded)
        if self.is_embedding(recorded):
            return reply
        return _rejection(recorded) or reply

    def is_embedding(self, recorded: Recorded) -> bool:
        return recorded.path == "/v2/embed"

    def render_embeddings(self, recorded: Recorded) -> dict[str, Any]:
        """Cohere v2's embed answer (``embeddings.float``, billed input tokens)."""
        body = recorded.body
        size = body.get("output_dimension") or 64
        texts = body["texts"]
        return {
            "id": "embed_fake",
            "texts": texts,
            "embeddings": {"float": [fake_vector(text, size) for text in texts]},
            "meta": {"billed_units": {"input_tokens": sum(len(t.split()) for t in texts)}},
        }

    def is_stream(self, recorded: Recorded) -> bool:
        return bool(isinstance(recorded.body, dict) and recorded.body.get("stream"))

    def last_user_text(self, recorded: Recorded) -> str:
        messages = recorded.body.get("messages", []) if isinstance(recorded.body, dict) else []
        users = [message.get("content") for message in messages if message.get("role") == "user"]
        return str(users[-1]) if users else ""

    def render_json(self, reply: Reply, recorded: Recorded) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant"}
        if reply.tool_calls:  # what the model writes before its calls is its tool plan
            if reply.text:
                message["tool_plan"] = reply.text
            message["tool_calls"] = tool_calls_json(reply, recorded)
        elif reply.text:
            message["content"] = [{"type": "text", "text": reply.text}]
        return {
            "id": "fake-chat",
            "finish_reason": _FINISH_REASONS.get(reply.finish_reason, reply.finish_reason),
            "message": message,
            "usage": _usage(reply),
        }

    def render_stream(self, reply: Reply, recorded: Recorded) -> Iterator[bytes]:
        start = {
            "role": "assistant",
            "content": [],
            "tool_plan": "",
            "tool_calls": [],
            "citations": [],
        }
        yield _event("message-start", id="fake-chat", delta={"message": start})
        if reply.tool_calls:  # the text before the calls streams as the tool plan
            for text in reply.chunks:
                yield _event("tool-plan-delta", delta={"message": {"tool_plan": text}})
        elif reply.chunks:
            content = {"content": {"type": "text", "text": ""}}
            yield _event("content-start", index=0, delta={"message": content})
            for text in reply.chunks:
                yield _event(
                    "content-delta", index=0, delta={"message": {"content": {"text": text}}}
                )
            yield _event("content-end", index=0)
        for index, (name, arguments) in enumerate(reply.tool_calls):
            function = {"name": name, "arguments": ""}
            call = {"id": recorded.call_id("call", index), "type": "function", "function": function}
            yield _event("tool-call-start", index=index, delta={"message": {"tool_calls": call}})
            piece = {"function": {"arguments": json.dumps(arguments)}}
            yield _event("tool-call-delta", index=index, delta={"message": {"tool_calls": piece}})
            yield _event("tool-call-end", index=index)
        finish = _FINISH_REASONS.get(reply.finish_reason, reply.finish_reason)
        yield _event("message-end", delta={"finish_reason": finish, "usage": _usage(reply)})

    def render_error(self, reply: Reply) -> Any:
        if isinstance(reply.error_body, str):
            return {"id": "fake-error", "message": reply.error_body}
        return reply.error_body


def _rejection(recorded: Recorded) -> Reply | None:
    """The errors the real API gives a request that breaks its basic rules."""
    if not recorded.headers.get("authorization", "").startswith("Bearer "):
        return Reply.of_error(401, "no api key supplied")
    body = recorded.body if isinstance(recorded.body, dict) else {}
    if "model" not in body or not body.get("messages"):
        return Reply.of_error(400, "invalid request: model and messages are required")
    for tool in body.get("tools") or []:
        name = str(tool.get("function", {}).get("name", ""))
        if not TOOL_NAME.fullmatch(name):
            return Reply.of_error(400, f"invalid request: tool name {name!r} is not valid")
    problem = unanswered_tool_calls(body["messages"])
    return Reply.of_error(400, f"invalid request: {problem}") if problem else None


def _event(kind: str, **payload: Any) -> bytes:
    return sse({"type": kind, **payload}, event=kind)


def _usage(reply: Reply) -> dict[str, Any]:
    counts = {"input_tokens": reply.prompt_tokens, "output_tokens": reply.completion_tokens}
    return {"billed_units": counts, "tokens": counts}
