"""The Anthropic Messages API (``POST /v1/messages``).

Structured output is native through a forced tool: the schema becomes the input schema
of a ``json_response`` tool the model must call, and that call's input is handed back as
the reply's text. Only when the request has no tools of its own (forcing one tool would
keep the model from the others) and the schema has an object root (tool inputs are
objects); otherwise the system-prompt instruction alone asks for JSON.
"""

import json
from dataclasses import dataclass, field
from typing import Any

from httpx_sse import ServerSentEvent

from inference.neutral.types import (
    Block,
    ChatRequest,
    ChatResponse,
    Document,
    Finish,
    FinishReason,
    Message,
    Part,
    Reasoning,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolChoice,
    Usage,
    UsageReport,
    arguments_object,
)
from inference.providers.base import (
    Provider,
    ProviderError,
    thinking_budget,
    upstream_message,
)
from inference.providers.streaming import StreamCall
from inference.providers.toolnames import LETTERS_DIGITS_DASHES

API_VERSION = "2023-06-01"
# Anthropic requires max_tokens. 4096 is within the output limit of every Claude model.
DEFAULT_MAX_TOKENS = 4096
MIN_THINKING = 1024  # the smallest thinking budget Anthropic takes
RESPONSE_TOOL = "json_response"
# Blocks of extended thinking: kept with the reply and sent back in its assistant turn,
# signature and all (Anthropic requires them there when a tool round continues).
THINKING_BLOCKS = ("thinking", "redacted_thinking")
COUNTED = ("model", "system", "messages", "tools", "tool_choice", "thinking")  # count_tokens

_STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "model_context_window_exceeded": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


class AnthropicProvider(Provider):
    wire = "anthropic"
    tool_names = LETTERS_DIGITS_DASHES

    @property
    def url(self) -> str:
        return f"{self.base_url}/v1/messages"

    def headers(self) -> dict[str, str]:
        return {"x-api-key": self.settings.api_key, "anthropic-version": API_VERSION}

    async def count_tokens(self, request: ChatRequest) -> int:
        """Anthropic's own count of the request's input tokens."""
        body = encode_request(request, stream=False)
        counted = {key: body[key] for key in COUNTED if key in body}
        answer = await self.post_json(f"{self.url}/count_tokens", counted, _beta(request))
        tokens = answer.get("input_tokens")
        if not isinstance(tokens, int):
            raise ProviderError(502, f"{self.name} returned a count without input_tokens")
        return tokens

    async def complete_once(self, request: ChatRequest) -> ChatResponse:
        body = await self.post_json(self.url, encode_request(request, stream=False), _beta(request))
        return self.reply_of(request, body)

    def batch_body(self, request: ChatRequest) -> dict[str, Any]:
        return encode_request(self.readable(request), stream=False)

    def reply_of(self, request: ChatRequest, body: dict[str, Any]) -> ChatResponse:
        if not isinstance(body.get("content"), list):
            raise ProviderError(502, f"{self.name} returned a reply without content")
        text: list[str] = []
        calls: list[ToolCall] = []
        reasoning: list[dict[str, Any]] = []
        for block in body["content"]:
            if block.get("type") in THINKING_BLOCKS:
                reasoning.append(block)
            elif block.get("type") == "text":
                text.append(block.get("text") or "")
            elif block.get("type") == "tool_use" and _is_response_tool(request, block):
                text.append(json.dumps(block.get("input") or {}))
            elif block.get("type") == "tool_use":
                arguments = json.dumps(block.get("input") or {})
                calls.append(ToolCall(id=block["id"], name=block["name"], arguments=arguments))
        reason = _STOP_REASONS.get(body.get("stop_reason") or "end_turn", "stop")
        return ChatResponse(
            text="".join(text),
            finish_reason="tool_calls" if calls else _no_tool_calls(reason),
            usage=_usage(body.get("usage")),
            tool_calls=tuple(calls),
            reasoning=tuple(reasoning),
            response_id=body.get("id"),
            response_model=body.get("model"),
            by_stop_sequence=body.get("stop_reason") == "stop_sequence",
        )

    def stream_call(self, request: ChatRequest) -> StreamCall:
        body = encode_request(request, stream=True)
        return StreamCall(self.url, body, _EventDecoder(self, request), _beta(request))

    def stream_error(self, data: str, payload: dict[str, Any]) -> ProviderError:
        detail = self.redact(upstream_message(data))
        error_type = (payload.get("error") or {}).get("type")
        if error_type == "overloaded_error":
            return self.overloaded(detail)
        if error_type == "rate_limit_error":
            return self.rate_limited(detail, None)
        return ProviderError(502, f"{self.name} failed mid-stream: {detail}", retryable=True)


def _beta(request: ChatRequest) -> dict[str, str]:
    """The client's ``anthropic-beta`` header, for the fields it passed on."""
    return dict(request.sampling.passed_to("anthropic").headers)


def encode_request(request: ChatRequest, stream: bool) -> dict[str, Any]:
    sampling = request.sampling
    body: dict[str, Any] = {
        "model": request.model,
        "max_tokens": sampling.max_tokens or DEFAULT_MAX_TOKENS,
        "messages": encode_messages(request.messages),
    }
    budget = thinking_budget(sampling.reasoning_effort)
    if request.system and request.system_cache_control is not None:
        body["system"] = [
            {"type": "text", "text": request.system, "cache_control": request.system_cache_control}
        ]
    elif request.system:
        body["system"] = request.system
    if sampling.stop:
        body["stop_sequences"] = list(sampling.stop)
    if sampling.top_k is not None:
        body["top_k"] = sampling.top_k
    tools = [
        {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}
        for tool in request.tools
    ]
    if tools and (request.tool_choice is not None or request.parallel_tool_calls is False):
        body["tool_choice"] = _encode_tool_choice(request.tool_choice, request.parallel_tool_calls)
    schema = _response_tool_schema(request)
    if schema is not None:
        tools.append(
            {
                "name": RESPONSE_TOOL,
                "description": "Give your reply: its input is the JSON value of the reply.",
                "input_schema": schema,
            }
        )
        body["tool_choice"] = {"type": "tool", "name": RESPONSE_TOOL}
    if tools:
        body["tools"] = tools
    forced = body.get("tool_choice", {}).get("type") in ("any", "tool")
    # Claude thinks only when no tool is forced, and only when a tool round under way
    # has its thinking to send back.
    if budget and not forced and _may_think(body["messages"]):
        body.update(_thinking(budget, sampling.max_tokens))
    if "thinking" not in body:  # with thinking, Anthropic takes neither (it samples at 1)
        if sampling.temperature is not None:
            body["temperature"] = sampling.temperature
        if sampling.top_p is not None:
            body["top_p"] = sampling.top_p
    body.update(sampling.passed_to("anthropic").fields)  # the client's own choices win
    if stream:
        body["stream"] = True
    return body


_CHOICE_TYPES = {"auto": "auto", "required": "any", "none": "none"}


def _encode_tool_choice(choice: ToolChoice | None, parallel: bool | None) -> dict[str, Any]:
    choice = choice or ToolChoice()
    if choice.name is not None:
        encoded: dict[str, Any] = {"type": "tool", "name": choice.name}
    else:
        encoded = {"type": _CHOICE_TYPES[choice.mode]}
    if parallel is False and encoded["type"] != "none":
        encoded["disable_parallel_tool_use"] = True
    return encoded


def encode_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """Content blocks per turn; tool results ride in the user turn, consecutive turns merge."""
    encoded: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = _blocks(message)
        if not blocks:
            continue
        if encoded and encoded[-1]["role"] == role:
            encoded[-1]["content"].extend(blocks)
        else:
            encoded.append({"role": role, "content": blocks})
    return encoded


def _may_think(messages: list[dict[str, Any]]) -> bool:
    """Anthropic refuses thinking when the last assistant turn calls tools without
    starting with its thinking (a client's follow-up to a round whose thinking is lost)."""
    last = next((message for message in reversed(messages) if message["role"] == "assistant"), None)
    if last is None or not any(block["type"] == "tool_use" for block in last["content"]):
        return True
    return last["content"][0]["type"] in THINKING_BLOCKS


def _thinking(budget: int, max_tokens: int | None) -> dict[str, Any]:
    """Extended thinking: the budget must stay under max_tokens (and at least 1024)."""
    if max_tokens is not None:
        budget = min(budget, max_tokens - 1)
        if budget < MIN_THINKING:
            return {}
        return {"thinking": {"type": "enabled", "budget_tokens": budget}}
    return {
        "thinking": {"type": "enabled", "budget_tokens": budget},
        "max_tokens": budget + DEFAULT_MAX_TOKENS,
    }


def _blocks(message: Message) -> list[dict[str, Any]]:
    blocks = _message_blocks(message)
    if message.cache_control is not None and blocks and "cache_control" not in blocks[-1]:
        blocks[-1] = {**blocks[-1], "cache_control": message.cache_control}
    return blocks


def _message_blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        result: dict[str, Any] = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id,
            "content": message.content,
        }
        if message.failed:
            result["is_error"] = True
        return [result]
    blocks: list[dict[str, Any]] = [
        item
        for item in message.reasoning
        if isinstance(item, dict) and item.get("type") in THINKING_BLOCKS
    ]
    if message.parts:
        blocks.extend(_part_block(part) for part in message.parts)
    elif message.content:
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(
        {
            "type": "tool_use",
            "id": call.id,
            "name": call.name,
            "input": arguments_object(call.arguments),
        }
        for call in message.tool_calls
    )
    return blocks


def _part_block(part: Part) -> dict[str, Any]:
    if isinstance(part, str):
        return {"type": "text", "text": part}
    if isinstance(part, Block):
        return part.block
    if isinstance(part, Document):
        # The block a Messages client sent keeps its title, context, citations and cache
        # marker; the bytes always go as base64 (a gateway file id is not Anthropic's).
        source = {"type": "base64", "media_type": part.media_type, "data": part.data}
        return {**(part.block or {"title": part.filename}), "type": "document", "source": source}
    inline = part.inline
    if inline is None:
        return {"type": "image", "source": {"type": "url", "url": part.url}}
    media_type, data = inline
    return {"type": "image", "source": {"type": "base64", "media_type": media_type, "data": data}}


def _response_tool_schema(request: ChatRequest) -> dict[str, Any] | None:
    response_format = request.response_format
    if response_format is None or request.tools:
        return None
    if response_format.kind == "json_object":
        return {"type": "object"}
    return response_format.object_schema


def _is_response_tool(request: ChatRequest, block: dict[str, Any]) -> bool:
    return block.get("name") == RESPONSE_TOOL and _response_tool_schema(request) is not None


def _no_tool_calls(reason: FinishReason) -> FinishReason:
    # A forced response tool ends with stop_reason "tool_use", but it is the reply itself.
    return "stop" if reason == "tool_calls" else reason


def _usage(usage: dict[str, Any] | None) -> Usage:
    if not usage:
        return Usage()
    return Usage(
        prompt_tokens=_input_tokens(usage),
        completion_tokens=int(usage.get("output_tokens") or 0),
        cached_tokens=_cached_tokens(usage),
        cache_write_tokens=_cache_writes(usage),
        reasoning_tokens=_thinking_tokens(usage),
    )


def _thinking_tokens(usage: dict[str, Any]) -> int | None:
    """Output tokens spent thinking, where Anthropic counts them apart."""
    value = (usage.get("output_tokens_details") or {}).get("thinking_tokens")
    return int(value) if value is not None else None


def _cached_tokens(usage: dict[str, Any]) -> int | None:
    value = usage.get("cache_read_input_tokens")
    return int(value) if value is not None else None


def _cache_writes(usage: dict[str, Any]) -> int | None:
    value = usage.get("cache_creation_input_tokens")
    return int(value) if value is not None else None


def _input_tokens(usage: dict[str, Any]) -> int:
    """Anthropic counts cached prompt tokens apart from ``input_tokens``; all are prompt."""
    return sum(
        int(usage.get(name) or 0)
        for name in ("input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens")
    )


class _EventDecoder:
    """The Messages API's events, until ``message_stop``."""

    def __init__(self, provider: AnthropicProvider, request: ChatRequest) -> None:
        self.provider = provider
        self.state = _StreamState(request)
        self.ended = False

    def decode(self, event: ServerSentEvent) -> list[StreamEvent]:
        if event.event == "message_stop":
            self.ended = True
        if event.event == "ping" or not event.data:
            return []
        payload = self.provider.event_json(event.data)
        kind = payload.get("type")
        if kind == "error":
            raise self.provider.stream_error(event.data, payload)
        if kind == "message_stop":
            self.ended = True
        return self.state.events(payload)


@dataclass
class _StreamState:
    """Turns ``message_start`` … ``message_stop`` events into neutral stream events."""

    request: ChatRequest
    prompt_tokens: int = 0
    cached_tokens: int | None = None
    cache_writes: int | None = None
    call_index: dict[int, int] = field(default_factory=dict)  # content block → tool call
    response_blocks: set[int] = field(default_factory=set)
    thinking: dict[int, dict[str, Any]] = field(default_factory=dict)  # block → so far
    message: dict[str, Any] = field(default_factory=dict)  # message_start's (id, model)

    def events(self, payload: dict[str, Any]) -> list[StreamEvent]:
        kind = payload.get("type")
        index = payload.get("index", 0)
        if kind == "message_start":
            self.message = payload["message"]
            usage = self.message.get("usage") or {}
            self.prompt_tokens = _input_tokens(usage)
            self.cached_tokens = _cached_tokens(usage)
            self.cache_writes = _cache_writes(usage)
        elif kind == "content_block_start":
            return self._block_start(index, payload["content_block"])
        elif kind == "content_block_delta":
            return self._block_delta(index, payload["delta"])
        elif kind == "content_block_stop" and index in self.thinking:
            return [Reasoning(self.thinking.pop(index))]
        elif kind == "message_delta":
            return self._message_delta(payload)
        return []

    def _block_start(self, index: int, block: dict[str, Any]) -> list[StreamEvent]:
        if block.get("type") in THINKING_BLOCKS:
            self.thinking[index] = dict(block)
            return []
        if block.get("type") == "text" and block.get("text"):
            return [TextDelta(block["text"])]
        if block.get("type") != "tool_use":
            return []
        if _is_response_tool(self.request, block):
            self.response_blocks.add(index)
            return []
        self.call_index[index] = len(self.call_index)
        return [ToolCallDelta(index=self.call_index[index], id=block["id"], name=block["name"])]

    def _block_delta(self, index: int, delta: dict[str, Any]) -> list[StreamEvent]:
        if delta.get("type") in ("thinking_delta", "signature_delta") and index in self.thinking:
            key = delta["type"].removesuffix("_delta")
            block = self.thinking[index]
            block[key] = block.get(key, "") + delta[key]
            return []
        if delta.get("type") == "text_delta":
            return [TextDelta(delta["text"])]
        if delta.get("type") != "input_json_delta":
            return []
        if index in self.response_blocks:
            return [TextDelta(delta["partial_json"])]
        if index in self.call_index:
            return [ToolCallDelta(index=self.call_index[index], arguments=delta["partial_json"])]
        return []

    def _message_delta(self, payload: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        reason = (payload.get("delta") or {}).get("stop_reason")
        if reason:
            finish = _STOP_REASONS.get(reason, "stop")
            events.append(
                Finish(
                    finish if self.call_index else _no_tool_calls(finish),
                    self.message.get("id"),
                    self.message.get("model"),
                    by_stop_sequence=reason == "stop_sequence",
                )
            )
        usage = payload.get("usage")
        if usage:
            prompt = _input_tokens(usage) or self.prompt_tokens
            completion = int(usage.get("output_tokens") or 0)
            cached = _cached_tokens(usage)
            cached = self.cached_tokens if cached is None else cached
            writes = _cache_writes(usage)
            writes = self.cache_writes if writes is None else writes
            events.append(
                UsageReport(
                    Usage(
                        prompt,
                        completion,
                        cached_tokens=cached,
                        cache_write_tokens=writes,
                        reasoning_tokens=_thinking_tokens(usage),
                    )
                )
            )
        return events
