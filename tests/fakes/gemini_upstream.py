"""A fake of the Gemini API: ``/v1beta/models/{model}:generateContent`` and
``:streamGenerateContent?alt=sse``.

Function calls come with an id and a thought signature, as Gemini 3 models send them.
"""

import base64
import json
import re
from collections.abc import Iterator
from typing import Any

from tests.fakes.base import FakeUpstream, Recorded, Reply, fake_vector, sse

TOOL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_.:-]{0,63}")
_FINISH_REASONS = {"stop": "STOP", "tool_calls": "STOP", "length": "MAX_TOKENS"}
_METHOD_PATH = re.compile(r"/v1(beta)?/models/[\w.-]+:(generateContent|streamGenerateContent)")
_STATUSES = {
    400: "INVALID_ARGUMENT",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    503: "UNAVAILABLE",
}


def thought_signature(index: int) -> str:
    return base64.b64encode(f"signature-{index}".encode()).decode()


# What the fake gives its calls, and the value Gemini documents for calls it did not make.
ISSUED_SIGNATURES = {thought_signature(index) for index in range(16)} | {
    "skip_thought_signature_validator"
}


class GeminiUpstream(FakeUpstream):
    def next_reply(self, recorded: Recorded) -> Reply:
        reply = super().next_reply(recorded)
        if self.fixed_reply(recorded) is not None:
            return reply
        return _rejection(recorded) or reply

    def is_embedding(self, recorded: Recorded) -> bool:
        return recorded.path.endswith(":batchEmbedContents")

    def fixed_reply(self, recorded: Recorded) -> Reply | None:
        """``countTokens``: one token a word of the request it is given."""
        if recorded.path.endswith(":countTokens"):
            asked = (recorded.body or {}).get("generateContentRequest") or {}
            words = len(json.dumps(asked).split())
            return Reply(raw_body={"totalTokens": words})
        return super().fixed_reply(recorded)

    def render_embeddings(self, recorded: Recorded) -> dict[str, Any]:
        """Gemini's batchEmbedContents answer: values only, no usage."""
        embeddings = []
        for request in recorded.body["requests"]:
            text = "".join(part.get("text", "") for part in request["content"]["parts"])
            size = request.get("outputDimensionality") or 64
            embeddings.append({"values": fake_vector(text, size)})
        return {"embeddings": embeddings}

    def is_stream(self, recorded: Recorded) -> bool:
        return recorded.path.endswith(":streamGenerateContent")

    def last_user_text(self, recorded: Recorded) -> str:
        contents = recorded.body.get("contents", []) if isinstance(recorded.body, dict) else []
        for content in reversed(contents):
            texts = [part["text"] for part in content.get("parts", []) if "text" in part]
            if content.get("role") == "user" and texts:
                return texts[-1]
        return ""

    def render_json(self, reply: Reply, recorded: Recorded) -> dict[str, Any]:
        parts: list[dict[str, Any]] = [{"text": reply.text}] if reply.text else []
        parts.extend(_calls(reply, recorded))
        return _response(recorded, parts, reply, _FINISH_REASONS.get(reply.finish_reason, "STOP"))

    def render_stream(self, reply: Reply, recorded: Recorded) -> Iterator[bytes]:
        pieces: list[list[dict[str, Any]]] = [[{"text": text}] for text in reply.chunks]
        if reply.tool_calls:
            pieces.append(_calls(reply, recorded))
        pieces = pieces or [[{"text": ""}]]
        for count, parts in enumerate(pieces, start=1):
            last = count == len(pieces)
            finish = _FINISH_REASONS.get(reply.finish_reason, "STOP") if last else None
            yield sse(_response(recorded, parts, reply, finish, complete_usage=last))

    def render_error(self, reply: Reply) -> Any:
        if isinstance(reply.error_body, str):
            status = _STATUSES.get(reply.status, "UNKNOWN")
            return {"error": {"code": reply.status, "message": reply.error_body, "status": status}}
        return reply.error_body


def _rejection(recorded: Recorded) -> Reply | None:
    """The errors the real API gives a request that breaks its basic rules."""
    if not _METHOD_PATH.fullmatch(recorded.path):
        return Reply.of_error(404, f"{recorded.path} is not a known method")
    if "x-goog-api-key" not in recorded.headers and "key" not in recorded.query:
        return Reply.of_error(403, "Method doesn't allow unregistered callers")
    contents = recorded.body.get("contents") if isinstance(recorded.body, dict) else None
    if not contents or any(content.get("role") not in ("user", "model") for content in contents):
        return Reply.of_error(400, "contents: roles must be 'user' or 'model'")
    for tools in recorded.body.get("tools") or []:
        for declaration in tools.get("functionDeclarations") or []:
            if not TOOL_NAME.fullmatch(str(declaration.get("name", ""))):
                return Reply.of_error(
                    400, "Invalid function name. Must start with a letter or an underscore."
                )
    return _unanswered_calls(contents) or _unsigned_calls(contents)


def _unanswered_calls(contents: list[dict[str, Any]]) -> Reply | None:
    """A turn of function calls is followed by a user turn with one response for each."""
    for position, content in enumerate(contents):
        calls = [part for part in content.get("parts", []) if "functionCall" in part]
        if not calls:
            continue
        following = contents[position + 1]["parts"] if position + 1 < len(contents) else []
        responses = [part for part in following if "functionResponse" in part]
        if len(responses) != len(calls):
            return Reply.of_error(
                400,
                "Please ensure that the number of function response parts is equal to the "
                "number of function call parts of the function call turn.",
            )
    return None


def _unsigned_calls(contents: list[dict[str, Any]]) -> Reply | None:
    """Gemini 3: in the current turn (since the last user text), the first function call
    of each model turn carries the thought signature the model gave it."""
    starts = [
        position
        for position, content in enumerate(contents)
        if content.get("role") == "user" and any("text" in part for part in content["parts"])
    ]
    for position, content in enumerate(contents[starts[-1] if starts else 0 :]):
        calls = [part for part in content.get("parts", []) if "functionCall" in part]
        if calls and calls[0].get("thoughtSignature") not in ISSUED_SIGNATURES:
            name = calls[0]["functionCall"].get("name")
            return Reply.of_error(
                400,
                f"Function call `{name}` in the `{position}.` content block is missing a "
                "`thought_signature`.",
            )
    return None


def _calls(reply: Reply, recorded: Recorded) -> list[dict[str, Any]]:
    return [
        {
            "functionCall": {
                "id": recorded.call_id("call", index),
                "name": name,
                "args": arguments,
            },
            "thoughtSignature": thought_signature(index),
        }
        for index, (name, arguments) in enumerate(reply.tool_calls)
    ]


def _response(
    recorded: Recorded,
    parts: list[dict[str, Any]],
    reply: Reply,
    finish_reason: str | None,
    complete_usage: bool = True,
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"role": "model", "parts": parts}, "index": 0}
    if finish_reason:
        candidate["finishReason"] = finish_reason
    usage: dict[str, Any] = {"promptTokenCount": reply.prompt_tokens}
    if reply.cached_tokens:
        usage["cachedContentTokenCount"] = reply.cached_tokens
    if complete_usage:
        # Thinking tokens are counted apart from the candidates' tokens.
        usage["candidatesTokenCount"] = reply.completion_tokens - reply.reasoning_tokens
        if reply.reasoning_tokens:
            usage["thoughtsTokenCount"] = reply.reasoning_tokens
        usage["totalTokenCount"] = reply.prompt_tokens + reply.completion_tokens
    model = recorded.path.rsplit("/", 1)[-1].split(":", 1)[0]
    return {
        "candidates": [candidate],
        "usageMetadata": usage,
        "modelVersion": model,
        "responseId": "fake-response",
    }
