"""A fake of the OpenAI chat-completions API (also what groq and deepseek speak).

Run it alone to try the gateway without API keys:
``python -m tests.fakes.openai_upstream --port 9100`` answers every call with
"You said: <your last message>". A request with ``logprobs: true`` gets logprobs for
each piece of text, whole and streamed, as the real API gives them. ``GET
/v1/organization/costs`` (the organization Costs API) answers the ``costs`` a test sets,
to an admin key (``sk-admin-…``) only. The Files and Batch APIs take provider batches
(``tests.fakes.batches``: ``provider_batches.polls`` polls before one completes).

``--stream-events 40 --event-gap-ms 5`` paces it as a model streams tokens: every reply
has enough words that a stream of it is 40 SSE events (the role, one event per word, the
finish, the usage when asked and ``[DONE]``), each event in its own write, 5 ms apart.

Embeddings come as OpenAI sends them: float32 values, as JSON numbers or, when the call
asks ``encoding_format: base64``, as base64 of their little-endian bytes.
``ignores_encoding_format`` (``--ignore-encoding-format``) answers numbers whatever the
call asks, as some OpenAI-compatible servers do.
"""

import argparse
import base64
import json
import re
import struct
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

from tests.fakes.base import FakeUpstream, Recorded, Reply, fake_vector, sse
from tests.fakes.batches import BatchStore, openai_batch_reply
from tests.fakes.billing import Cost, bill_page, day_start

TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
COSTS_PATH = "/v1/organization/costs"
BATCH_API_PATHS = ("/v1/files", "/v1/batches")


class OpenAIUpstream(FakeUpstream):
    stream_events = 0  # paced: every reply streams in this many events (0: as it says)
    event_gap = 0.0  # paced: seconds between two events
    ignores_encoding_format = False  # embeddings as numbers even when base64 is asked

    def __init__(self, port: int = 0) -> None:
        super().__init__(port)
        self.costs: list[Cost] = []  # what the organization Costs API answers
        self.provider_batches = BatchStore(self)  # the Files and Batch APIs' own

    def reset(self) -> None:
        super().reset()
        self.ignores_encoding_format = False
        self.costs.clear()
        self.provider_batches.reset()

    def fixed_reply(self, recorded: Recorded) -> Reply | None:
        if recorded.path == COSTS_PATH:
            return costs_reply(recorded, self.costs)
        batch_api = openai_batch_reply(self.provider_batches, recorded)
        if batch_api is not None:
            return batch_api
        return super().fixed_reply(recorded)

    def paced(self, events: int, gap: float) -> "OpenAIUpstream":
        """Every reply (unless scripted) long enough that its stream is ``events`` events,
        sent one per write, ``gap`` seconds apart."""
        self.stream_events, self.event_gap = events, gap
        return self

    def default_reply(self, recorded: Recorded) -> Reply:
        if not self.stream_events:
            return super().default_reply(recorded)
        body = recorded.body if isinstance(recorded.body, dict) else {}
        usage = bool((body.get("stream_options") or {}).get("include_usage"))
        framing = 3 + usage  # the role, the finish, the usage and [DONE]
        words = [f"w{index} " for index in range(max(1, self.stream_events - framing))]
        return Reply.of_chunks(*words, chunk_delay=self.event_gap)

    def usage(self, reply: Reply) -> dict[str, Any]:
        return _usage(reply)

    def next_reply(self, recorded: Recorded) -> Reply:
        reply = super().next_reply(recorded)
        if self.is_embedding(recorded) or recorded.path.startswith(BATCH_API_PATHS):
            return reply
        return _rejection(recorded) or reply

    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def is_embedding(self, recorded: Recorded) -> bool:
        return recorded.path.endswith("/embeddings")

    def render_embeddings(self, recorded: Recorded) -> dict[str, Any]:
        """OpenAI's embeddings list; ``dimensions`` and ``encoding_format`` honoured;
        tokens: one per word, or the length of a token array (``input`` may be a string,
        strings, one token array or token arrays, as OpenAI takes it)."""
        body = recorded.body
        given = body["input"]
        if isinstance(given, str) or (given and isinstance(given[0], int)):
            given = [given]
        texts = [
            " ".join(f"token{token}" for token in item) if isinstance(item, list) else item
            for item in given
        ]
        size = body.get("dimensions") or 64
        tokens = sum(len(text.split()) for text in texts)
        encoding = "float" if self.ignores_encoding_format else body.get("encoding_format")
        return {
            "object": "list",
            "data": [
                {
                    "object": "embedding",
                    "index": index,
                    "embedding": float32_embedding(fake_vector(text, size), encoding),
                }
                for index, text in enumerate(texts)
            ],
            "model": body["model"],
            "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
        }

    def is_stream(self, recorded: Recorded) -> bool:
        return bool(isinstance(recorded.body, dict) and recorded.body.get("stream"))

    def last_user_text(self, recorded: Recorded) -> str:
        messages = recorded.body.get("messages", []) if isinstance(recorded.body, dict) else []
        users = [message.get("content") for message in messages if message.get("role") == "user"]
        return str(users[-1]) if users else ""

    def render_json(self, reply: Reply, recorded: Recorded) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = tool_calls_json(reply, recorded)
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self._model(recorded),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": reply.finish_reason,
                    "logprobs": logprobs_of(reply.text) if _wants_logprobs(recorded) else None,
                }
            ],
            "usage": self.usage(reply),
        }

    def render_stream(self, reply: Reply, recorded: Recorded) -> Iterator[bytes]:
        envelope = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self._model(recorded),
        }

        def chunk(
            delta: dict[str, Any], finish_reason: str | None = None, logprobs: Any = None
        ) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
            if logprobs is not None:
                choice["logprobs"] = logprobs
            return sse({**envelope, "choices": [choice]})

        yield chunk({"role": "assistant", "content": ""})
        for text in reply.chunks:
            logprobs = logprobs_of(text) if _wants_logprobs(recorded) else None
            yield chunk({"content": text}, logprobs=logprobs)
        for index, (name, arguments) in enumerate(reply.tool_calls):
            call = {"index": index, "id": recorded.call_id("call", index), "type": "function"}
            yield chunk({"tool_calls": [{**call, "function": {"name": name, "arguments": ""}}]})
            yield chunk(
                {"tool_calls": [{"index": index, "function": {"arguments": json.dumps(arguments)}}]}
            )
        yield chunk({}, reply.finish_reason)
        options = recorded.body.get("stream_options") or {}
        if options.get("include_usage"):
            yield sse({**envelope, "choices": [], "usage": self.usage(reply)})
        yield sse("[DONE]")

    def render_error(self, reply: Reply) -> Any:
        if isinstance(reply.error_body, str):
            return {
                "error": {
                    "message": reply.error_body,
                    "type": "invalid_request_error",
                    "code": None,
                }
            }
        return reply.error_body

    def _model(self, recorded: Recorded) -> str:
        return str(recorded.body.get("model", "")) if isinstance(recorded.body, dict) else ""


def float32_embedding(vector: list[float], encoding: str | None) -> list[float] | str:
    """``vector`` as OpenAI's embeddings carry it: its float32 values, as numbers or (with
    ``encoding`` base64) as base64 of their little-endian bytes."""
    packed = struct.pack(f"<{len(vector)}f", *vector)
    if encoding == "base64":
        return base64.b64encode(packed).decode()
    return list(struct.unpack(f"<{len(vector)}f", packed))


def tool_calls_json(reply: Reply, recorded: Recorded) -> list[dict[str, Any]]:
    """The reply's tool calls in the OpenAI shape, which Cohere v2 shares."""
    return [
        {
            "id": recorded.call_id("call", index),
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for index, (name, arguments) in enumerate(reply.tool_calls)
    ]


def _rejection(recorded: Recorded) -> Reply | None:
    """The errors the real API gives a request that breaks its rules on tools."""
    body = recorded.body if isinstance(recorded.body, dict) else {}
    for index, tool in enumerate(body.get("tools") or []):
        if not TOOL_NAME.fullmatch(str(tool.get("function", {}).get("name", ""))):
            return Reply.of_error(
                400, f"Invalid 'tools[{index}].function.name': string does not match pattern."
            )
    problem = unanswered_tool_calls(body.get("messages") or [])
    return Reply.of_error(400, problem) if problem else None


def unanswered_tool_calls(messages: list[dict[str, Any]]) -> str | None:
    """What is wrong with the pairing of tool calls and tool messages (OpenAI's rules,
    which Cohere v2 shares): each tool message answers a call of the assistant message
    before it, and every call is answered before the next other message."""
    pending: set[str] = set()
    for position, message in enumerate(messages):
        if message.get("role") == "tool":
            if message.get("tool_call_id") not in pending:
                return (
                    f"Invalid parameter: messages[{position}]: messages with role 'tool' must be "
                    "a response to a preceeding message with 'tool_calls'."
                )
            pending.discard(message["tool_call_id"])
            continue
        if pending:
            return (
                "An assistant message with 'tool_calls' must be followed by tool messages "
                f"responding to each 'tool_call_id'. Missing: {sorted(pending)}"
            )
        pending = {call["id"] for call in message.get("tool_calls") or []}
    return None


def logprobs_of(text: str) -> dict[str, Any]:
    """The logprobs the fake gives a piece of text: one token, at -0.5."""
    token = {"token": text, "logprob": -0.5, "bytes": list(text.encode()), "top_logprobs": []}
    return {"content": [token], "refusal": None}


def _wants_logprobs(recorded: Recorded) -> bool:
    return bool(isinstance(recorded.body, dict) and recorded.body.get("logprobs"))


def _usage(reply: Reply) -> dict[str, Any]:
    usage: dict[str, Any] = {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }
    if reply.cached_tokens:
        usage["prompt_tokens_details"] = {"cached_tokens": reply.cached_tokens, "audio_tokens": 0}
    if reply.reasoning_tokens:
        usage["completion_tokens_details"] = {"reasoning_tokens": reply.reasoning_tokens}
    return usage


def costs_reply(recorded: Recorded, costs: list[Cost]) -> Reply:
    """The organization Costs API: daily buckets (``bucket_width=1d``), grouped by
    ``line_item`` and/or ``project_id`` (else one total a day), of ``project_ids`` only
    when given, ``limit`` buckets a page (1 to 180, default 7)."""
    key = recorded.headers.get("authorization", "").removeprefix("Bearer ")
    if not key.startswith("sk-admin-"):
        shown = f"{key[:8]}{'*' * max(0, len(key) - 12)}{key[-4:]}"
        return Reply(status=401, error_body=_error(f"Incorrect API key provided: {shown}."))
    query = recorded.query
    if "start_time" not in query:
        return Reply(status=400, error_body=_error("start_time: Field required"))
    limit = int(query.get("limit", ["7"])[0])
    if not 1 <= limit <= 180 or query.get("bucket_width", ["1d"]) != ["1d"]:
        return Reply(status=400, error_body=_error("limit or bucket_width out of range"))
    start = datetime.fromtimestamp(int(query["start_time"][0]), UTC)
    end = datetime.fromtimestamp(int(query["end_time"][0]), UTC) if "end_time" in query else None
    projects = query.get("project_ids")
    chosen = [cost for cost in costs if projects is None or cost.project in projects]
    page = bill_page(chosen, start, end, limit, query.get("page", [None])[0])
    group_by = query.get("group_by", [])
    buckets = [
        {
            "object": "bucket",
            "start_time": int(day_start(day).timestamp()),
            "end_time": int(day_start(day).timestamp()) + 86_400,
            "results": _cost_results(day_costs, group_by),
        }
        for day, day_costs in page.days
    ]
    body = {
        "object": "page",
        "data": buckets,
        "has_more": page.next_page is not None,
        "next_page": page.next_page,
    }
    return Reply(raw_body=body)


def _cost_results(costs: list[Cost], group_by: list[str]) -> list[dict[str, Any]]:
    groups: dict[tuple[str | None, str | None], Decimal] = {}
    for cost in costs:
        line_item = f"{cost.model}, {cost.tokens}" if "line_item" in group_by else None
        project = cost.project if "project_id" in group_by else None
        groups[line_item, project] = groups.get((line_item, project), Decimal(0)) + cost.usd
    return [
        {
            "object": "organization.costs.result",
            "amount": {"value": float(usd), "currency": "usd"},
            "line_item": line_item,
            "project_id": project,
        }
        for (line_item, project), usd in groups.items()
    ]


def _error(message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "invalid_request_error", "code": None}}


class DeepSeekUpstream(OpenAIUpstream):
    """DeepSeek's dialect of the format: cached prompt tokens as ``prompt_cache_hit_tokens``
    (and the rest as ``prompt_cache_miss_tokens``), not in ``prompt_tokens_details``."""

    def usage(self, reply: Reply) -> dict[str, Any]:
        usage = _usage(reply)
        usage.pop("prompt_tokens_details", None)
        usage["prompt_cache_hit_tokens"] = reply.cached_tokens
        usage["prompt_cache_miss_tokens"] = reply.prompt_tokens - reply.cached_tokens
        return usage


def main() -> None:
    parser = argparse.ArgumentParser(description="Fake OpenAI upstream for trying the gateway.")
    parser.add_argument("--port", type=int, default=9100)
    parser.add_argument(
        "--stream-events", type=int, default=0, help="pace: every stream this many SSE events"
    )
    parser.add_argument(
        "--event-gap-ms", type=float, default=0.0, help="pace: milliseconds between two events"
    )
    parser.add_argument(
        "--ignore-encoding-format",
        action="store_true",
        help="embeddings as numbers even when base64 is asked",
    )
    options = parser.parse_args()
    fake = OpenAIUpstream(port=options.port)
    fake.ignores_encoding_format = options.ignore_encoding_format
    if options.stream_events:
        fake.paced(options.stream_events, options.event_gap_ms / 1000)
    print(f"fake OpenAI upstream on {fake.base_url}", flush=True)
    fake.start()
    fake._thread.join()


if __name__ == "__main__":
    main()
