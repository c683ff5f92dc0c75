"""A fake of Anthropic's Messages API (``POST /v1/messages``, JSON or an SSE event stream).

When the request forces a tool (``tool_choice: {type: tool}``), a scripted text that is a
JSON object comes back as that tool's ``tool_use`` input, as Claude would answer. A
stream reply with an ``error_body`` and status 200 fails after its content with an
``error`` event, as Anthropic reports an overload that strikes mid-stream. A reply's
``thinking`` comes first as a signed ``thinking`` block; with thinking on, the fake
refuses what the real API refuses: a temperature other than 1, a top_p below 0.95, a
tool round sent back without its thinking first, a thinking block with a wrong signature.
``POST /v1/messages/count_tokens`` answers what the test scripts (a ``raw_body``).
``/v1/messages/batches`` takes Message Batches (``tests.fakes.batches``:
``provider_batches.polls`` polls before one ends).
``GET /v1/organizations/cost_report`` (the Admin API's cost report) answers the ``costs``
a test sets, to an admin key (``sk-ant-admin…``) only.
"""

import base64
import json
import re
from collections.abc import Iterator
from datetime import datetime, timedelta
from decimal import Decimal
from typing import Any

from tests.fakes.base import FakeUpstream, Recorded, Reply, sse
from tests.fakes.batches import BatchStore, anthropic_batch_reply
from tests.fakes.billing import Cost, bill_page, day_start

TOOL_NAME = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_STOP_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "length": "max_tokens"}
_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}


def thinking_signature(thinking: str) -> str:
    return base64.b64encode(f"signed:{thinking}".encode()).decode()


COST_REPORT_PATH = "/v1/organizations/cost_report"
BATCHES_PATH = "/v1/messages/batches"


class AnthropicUpstream(FakeUpstream):
    def __init__(self, port: int = 0) -> None:
        super().__init__(port)
        self.costs: list[Cost] = []  # what the Admin API's cost report answers
        self.provider_batches = BatchStore(self)  # the Message Batches API's own

    def reset(self) -> None:
        super().reset()
        self.costs.clear()
        self.provider_batches.reset()

    def next_reply(self, recorded: Recorded) -> Reply:
        reply = super().next_reply(recorded)
        if recorded.path == COST_REPORT_PATH or recorded.path.startswith(BATCHES_PATH):
            return reply
        return _rejection(recorded) or reply

    def fixed_reply(self, recorded: Recorded) -> Reply | None:
        if recorded.path == COST_REPORT_PATH:
            return cost_report_reply(recorded, self.costs)
        batch_api = anthropic_batch_reply(self.provider_batches, recorded, self.url)
        if batch_api is not None:
            return batch_api
        return super().fixed_reply(recorded)

    def is_stream(self, recorded: Recorded) -> bool:
        return bool(isinstance(recorded.body, dict) and recorded.body.get("stream"))

    def last_user_text(self, recorded: Recorded) -> str:
        for message in reversed(_body(recorded).get("messages", [])):
            if message.get("role") != "user":
                continue
            content = message.get("content")
            if isinstance(content, str):
                return content
            texts = [block["text"] for block in content if block.get("type") == "text"]
            if texts:
                return texts[-1]
        return ""

    def render_json(self, reply: Reply, recorded: Recorded) -> dict[str, Any]:
        content: list[dict[str, Any]] = []
        if reply.thinking:
            content.append(_thinking_block(reply.thinking))
        forced = _forced_input(reply, recorded)
        if forced is not None:
            content.append(_tool_use(recorded, 0, _forced_tool(recorded), forced))
        elif reply.text:
            content.append({"type": "text", "text": reply.text})
        content.extend(
            _tool_use(recorded, index, name, arguments)
            for index, (name, arguments) in enumerate(reply.tool_calls, start=len(content))
        )
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": _body(recorded).get("model", ""),
            "content": content,
            "stop_reason": _stop_reason(reply, forced is not None),
            "stop_sequence": None,
            "usage": {**_input_usage(reply), **_output_usage(reply)},
        }

    def render_stream(self, reply: Reply, recorded: Recorded) -> Iterator[bytes]:
        message = {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": _body(recorded).get("model", ""),
            "content": [],
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {**_input_usage(reply), "output_tokens": 1},
        }
        yield _event("message_start", {"message": message})
        yield _event("ping", {})
        blocks: list[tuple[dict[str, Any], list[dict[str, Any]]]] = []
        if reply.thinking:
            deltas = [
                {"type": "thinking_delta", "thinking": reply.thinking},
                {"type": "signature_delta", "signature": thinking_signature(reply.thinking)},
            ]
            blocks.append(({"type": "thinking", "thinking": "", "signature": ""}, deltas))
        forced = _forced_input(reply, recorded)
        if forced is not None:
            blocks.append(_streamed_tool_use(recorded, 0, _forced_tool(recorded), forced))
        elif reply.chunks:
            deltas = [{"type": "text_delta", "text": text} for text in reply.chunks]
            blocks.append(({"type": "text", "text": ""}, deltas))
        for name, arguments in reply.tool_calls:
            blocks.append(_streamed_tool_use(recorded, len(blocks), name, arguments))
        for index, (start, deltas) in enumerate(blocks):
            yield _event("content_block_start", {"index": index, "content_block": start})
            for delta in deltas:
                yield _event("content_block_delta", {"index": index, "delta": delta})
            yield _event("content_block_stop", {"index": index})
        if reply.error_body is not None:
            yield _event("error", {"error": reply.error_body})
            return
        stop: dict[str, Any] = {  # not "delta": the loop above names its items so
            "stop_reason": _stop_reason(reply, forced is not None),
            "stop_sequence": None,
        }
        usage = _output_usage(reply)
        yield _event("message_delta", {"delta": stop, "usage": usage})
        yield _event("message_stop", {})

    def render_error(self, reply: Reply) -> Any:
        if isinstance(reply.error_body, str):
            error_type = _ERROR_TYPES.get(reply.status, "api_error")
            return {
                "type": "error",
                "error": {"type": error_type, "message": reply.error_body},
                "request_id": "req_fake",
            }
        return reply.error_body


def cost_report_reply(recorded: Recorded, costs: list[Cost]) -> Reply:
    """The Admin API's cost report: daily buckets grouped by ``description`` (which fills
    ``model`` and the token type) and/or ``workspace_id`` (else one total a day), amounts
    as decimal strings of cents, ``limit`` buckets a page (1 to 31, default 7)."""
    if not recorded.headers.get("x-api-key", "").startswith("sk-ant-admin"):
        return Reply.of_error(401, "invalid x-api-key")
    if "anthropic-version" not in recorded.headers:
        return Reply.of_error(400, "anthropic-version: header is required")
    query = recorded.query
    if "starting_at" not in query:
        return Reply.of_error(400, "starting_at: Field required")
    limit = int(query.get("limit", ["7"])[0])
    if not 1 <= limit <= 31 or query.get("bucket_width", ["1d"]) != ["1d"]:
        return Reply.of_error(400, "limit or bucket_width out of range")
    start = datetime.fromisoformat(query["starting_at"][0])
    end = datetime.fromisoformat(query["ending_at"][0]) if "ending_at" in query else None
    page = bill_page(costs, start, end, limit, query.get("page", [None])[0])
    group_by = query.get("group_by[]", [])
    body = {
        "data": [
            {
                "starting_at": day_start(day).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "ending_at": day_start(day + timedelta(1)).strftime("%Y-%m-%dT%H:%M:%SZ"),
                "results": _report_results(day_costs, group_by),
            }
            for day, day_costs in page.days
        ],
        "has_more": page.next_page is not None,
        "next_page": page.next_page,
    }
    return Reply(raw_body=body)


def _report_results(costs: list[Cost], group_by: list[str]) -> list[dict[str, Any]]:
    described = "description" in group_by
    groups: dict[tuple[str | None, str | None, str | None], Decimal] = {}
    for cost in costs:
        model = cost.model if described else None
        tokens = cost.tokens if described else None
        workspace = cost.project if "workspace_id" in group_by else None
        key = (model, tokens, workspace)
        groups[key] = groups.get(key, Decimal(0)) + cost.usd
    return [
        {
            "amount": format(usd * 100, "f"),
            "currency": "USD",
            "cost_type": "tokens" if described else None,
            "description": f"{model} Usage - {tokens.title()} Tokens" if model and tokens else None,
            "model": model,
            "service_tier": "standard" if described else None,
            "token_type": {"input": "uncached_input_tokens", "output": "output_tokens"}.get(
                tokens or ""
            ),
            "context_window": "0-200k" if described else None,
            "workspace_id": workspace,
        }
        for (model, tokens, workspace), usd in groups.items()
    ]


def _rejection(recorded: Recorded) -> Reply | None:
    """The errors the real API gives a request that breaks its basic rules."""
    body = _body(recorded)
    if "x-api-key" not in recorded.headers and "authorization" not in recorded.headers:
        return Reply.of_error(401, "x-api-key header is required")
    if "anthropic-version" not in recorded.headers:
        return Reply.of_error(400, "anthropic-version: header is required")
    counting = recorded.path.endswith("/count_tokens")  # takes no max_tokens
    for field in ("model", "messages") if counting else ("model", "max_tokens", "messages"):
        if field not in body:
            return Reply.of_error(400, f"{field}: Field required")
    roles = {message.get("role") for message in body["messages"]}
    if roles - {"user", "assistant"}:
        return Reply.of_error(400, "messages: roles must be 'user' or 'assistant'")
    for index, tool in enumerate(body.get("tools") or []):
        if not TOOL_NAME.fullmatch(str(tool.get("name", ""))):
            return Reply.of_error(
                400, f"tools.{index}.name: String should match pattern '^[a-zA-Z0-9_-]{{1,64}}$'"
            )
    return _thinking_rules(body) or _unpaired_tool_results(body["messages"])


def _thinking_rules(body: dict[str, Any]) -> Reply | None:
    """What extended thinking requires of a request."""
    blocks = [
        (position, block)
        for position, message in enumerate(body["messages"])
        if isinstance(message.get("content"), list)
        for block in message["content"]
    ]
    for position, block in blocks:
        if block.get("type") == "thinking" and block.get("signature") != thinking_signature(
            block.get("thinking", "")
        ):
            return Reply.of_error(
                400, f"messages.{position}: Invalid `signature` in `thinking` block"
            )
    if (body.get("thinking") or {}).get("type") != "enabled":
        return None
    if body.get("temperature", 1) != 1:
        return Reply.of_error(400, "temperature may only be set to 1 when thinking is enabled")
    if body.get("top_p", 1) < 0.95:
        return Reply.of_error(
            400, "top_p must be greater than or equal to 0.95 or unset when thinking is enabled"
        )
    assistant = [m for m in body["messages"] if m.get("role") == "assistant"]
    content = assistant[-1].get("content") if assistant else None
    calls_tools = isinstance(content, list) and any(b.get("type") == "tool_use" for b in content)
    if calls_tools and content[0].get("type") not in ("thinking", "redacted_thinking"):
        return Reply.of_error(
            400,
            f"messages.{body['messages'].index(assistant[-1])}.content.0.type: Expected "
            "`thinking` or `redacted_thinking`, but found `"
            f"{content[0].get('type')}`. When `thinking` is enabled, a final `assistant` "
            "message must start with a thinking block.",
        )
    return None


def _unpaired_tool_results(messages: list[dict[str, Any]]) -> Reply | None:
    """Each tool_use is answered by a tool_result in the next (user) message, and each
    tool_result answers a tool_use of the message before it."""
    for position, message in enumerate(messages):
        blocks = message.get("content") if isinstance(message.get("content"), list) else []
        results = {
            block.get("tool_use_id") for block in blocks if block.get("type") == "tool_result"
        }
        before = messages[position - 1].get("content") if position else []
        uses = {
            block.get("id")
            for block in (before if isinstance(before, list) else [])
            if block.get("type") == "tool_use"
        }
        if results - uses:
            return Reply.of_error(
                400,
                f"messages.{position}.content: unexpected `tool_use_id` found in `tool_result` "
                "blocks. Each `tool_result` block must have a corresponding `tool_use` block "
                "in the previous message.",
            )
        if uses - results:
            return Reply.of_error(
                400,
                f"messages.{position}: `tool_use` ids were found without `tool_result` blocks "
                "immediately after",
            )
    return None


def _input_usage(reply: Reply) -> dict[str, int]:
    """Anthropic counts prompt tokens read from and written to its cache apart from
    ``input_tokens``."""
    uncached = reply.prompt_tokens - reply.cached_tokens - reply.cache_write_tokens
    usage = {"input_tokens": uncached}
    if reply.cached_tokens:
        usage["cache_read_input_tokens"] = reply.cached_tokens
    if reply.cache_write_tokens:
        usage["cache_creation_input_tokens"] = reply.cache_write_tokens
    return usage


def _output_usage(reply: Reply) -> dict[str, Any]:
    """Output tokens, with those spent thinking where there were any."""
    usage: dict[str, Any] = {"output_tokens": reply.completion_tokens}
    if reply.reasoning_tokens:
        usage["output_tokens_details"] = {"thinking_tokens": reply.reasoning_tokens}
    return usage


def _thinking_block(thinking: str) -> dict[str, Any]:
    return {"type": "thinking", "thinking": thinking, "signature": thinking_signature(thinking)}


def _body(recorded: Recorded) -> dict[str, Any]:
    return recorded.body if isinstance(recorded.body, dict) else {}


def _event(kind: str, payload: dict[str, Any]) -> bytes:
    return sse({"type": kind, **payload}, event=kind)


def _forced_tool(recorded: Recorded) -> str | None:
    choice = _body(recorded).get("tool_choice") or {}
    return choice.get("name") if choice.get("type") == "tool" else None


def _forced_input(reply: Reply, recorded: Recorded) -> dict[str, Any] | None:
    if _forced_tool(recorded) is None:
        return None
    try:
        value = json.loads(reply.text)
    except ValueError:
        return None
    return value if isinstance(value, dict) else None


def _tool_use(
    recorded: Recorded, index: int, name: str | None, arguments: dict[str, Any]
) -> dict[str, Any]:
    return {
        "type": "tool_use",
        "id": recorded.call_id("toolu", index),
        "name": name,
        "input": arguments,
    }


def _streamed_tool_use(
    recorded: Recorded, index: int, name: str | None, arguments: dict[str, Any]
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    text = json.dumps(arguments)
    middle = len(text) // 2
    deltas = [
        {"type": "input_json_delta", "partial_json": part}
        for part in (text[:middle], text[middle:])
    ]
    return _tool_use(recorded, index, name, {}), deltas


def _stop_reason(reply: Reply, forced: bool) -> str:
    return "tool_use" if forced else _STOP_REASONS.get(reply.finish_reason, reply.finish_reason)
