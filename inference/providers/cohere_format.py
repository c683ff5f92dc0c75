"""Cohere's v2 chat API (``POST /v2/chat``)."""

from dataclasses import dataclass, field
from typing import Any

import httpx
from httpx_sse import ServerSentEvent

from core.float32 import from_numbers
from inference.neutral.types import (
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    Embeddings,
    Finish,
    FinishReason,
    Message,
    ResponseFormat,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    ToolChoice,
    ToolSpec,
    Usage,
    UsageReport,
)
from inference.providers.base import Provider, ProviderError, upstream_message
from inference.providers.openai_format import encode_content, encode_tool_calls, encode_tools
from inference.providers.streaming import StreamCall
from inference.providers.toolnames import COHERE_NAMES

_FINISH_REASONS: dict[str, FinishReason] = {
    "COMPLETE": "stop",
    "STOP_SEQUENCE": "stop",
    "MAX_TOKENS": "length",
    "TOOL_CALL": "tool_calls",
}
# Finish reasons that mean the generation failed rather than ended.
_FAILED = {"ERROR", "TIMEOUT"}
# Cohere answers an unusable key with its own 498 besides the usual 401.
_INVALID_TOKEN = 498


class CohereProvider(Provider):
    wire = "cohere"
    tool_names = COHERE_NAMES

    @property
    def url(self) -> str:
        return f"{self.base_url}/v2/chat"

    def headers(self) -> dict[str, str]:
        key = self.settings.api_key
        return {"Authorization": f"Bearer {key}"} if key else {}

    async def embed_once(self, request: EmbeddingRequest) -> Embeddings:
        body: dict[str, Any] = {
            "model": request.model,
            "texts": list(request.texts),
            "input_type": "search_query" if request.purpose == "query" else "search_document",
            "embedding_types": ["float"],
        }
        if request.dimensions is not None:
            body["output_dimension"] = request.dimensions
        answer = await self.post_json(f"{self.base_url}/v2/embed", body)
        vectors = tuple(from_numbers(row) for row in answer["embeddings"]["float"])
        billed = ((answer.get("meta") or {}).get("billed_units") or {}).get("input_tokens")
        return Embeddings(vectors, None if billed is None else int(billed))

    async def complete_once(self, request: ChatRequest) -> ChatResponse:
        body = await self.post_json(self.url, encode_request(request, stream=False))
        message = body.get("message")
        if not isinstance(message, dict):
            raise ProviderError(502, f"{self.name} returned a reply without a message")
        reason = body.get("finish_reason") or "COMPLETE"
        if reason in _FAILED:
            raise ProviderError(502, f"{self.name} stopped generating: {reason}")
        # What the model wrote before its tool calls is Cohere's tool plan.
        text = str(message.get("tool_plan") or "") + "".join(
            item.get("text") or ""
            for item in message.get("content") or []
            if item.get("type") == "text"
        )
        calls = tuple(
            ToolCall(
                id=call["id"],
                name=call["function"]["name"],
                arguments=call["function"].get("arguments") or "{}",
            )
            for call in message.get("tool_calls") or []
        )
        return ChatResponse(
            text=text,
            finish_reason=_FINISH_REASONS.get(reason, "stop"),
            usage=_usage(body.get("usage")),
            tool_calls=calls,
            response_id=body.get("id"),
            response_model=request.model,  # Cohere's reply names no model: the one asked
            by_stop_sequence=reason == "STOP_SEQUENCE",
        )

    def stream_call(self, request: ChatRequest) -> StreamCall:
        body = encode_request(request, stream=True)
        return StreamCall(self.url, body, _EventDecoder(self, request.model))

    def status_error(self, status: int, text: str, headers: httpx.Headers) -> ProviderError:
        if status == _INVALID_TOKEN:
            return self.auth_failed(self.redact(upstream_message(text)))
        return super().status_error(status, text, headers)


def encode_request(request: ChatRequest, stream: bool) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.extend(_encode_message(message) for message in request.messages)
    body: dict[str, Any] = {"model": request.model, "messages": messages, "stream": stream}
    sampling = request.sampling
    for name, value in (
        ("temperature", sampling.temperature),
        ("p", sampling.top_p),
        ("k", sampling.top_k),
        ("max_tokens", sampling.max_tokens),
        ("seed", sampling.seed),
        ("frequency_penalty", sampling.frequency_penalty),
        ("presence_penalty", sampling.presence_penalty),
    ):
        if value is not None:
            body[name] = value
    if sampling.stop:
        body["stop_sequences"] = list(sampling.stop)
    if request.tools:
        body.update(_encode_tools(request.tools, request.tool_choice))
    if request.response_format is not None:
        response_format = encode_response_format(request.response_format)
        if response_format is not None:
            body["response_format"] = response_format
    return body


def _encode_tools(tools: tuple[ToolSpec, ...], choice: ToolChoice | None) -> dict[str, Any]:
    """Cohere cannot force one named tool: it gets only that tool, which is REQUIRED.
    It has no control of parallel calls."""
    if choice is not None and choice.name is not None:
        return {
            "tools": encode_tools(tuple(tool for tool in tools if tool.name == choice.name)),
            "tool_choice": "REQUIRED",
        }
    encoded: dict[str, Any] = {"tools": encode_tools(tools)}
    if choice is not None and choice.mode != "auto":
        encoded["tool_choice"] = choice.mode.upper()
    return encoded


def encode_response_format(response_format: ResponseFormat) -> dict[str, Any] | None:
    """JSON mode, with the schema when it has the object root Cohere requires."""
    if response_format.kind == "json_object":
        return {"type": "json_object"}
    schema = response_format.object_schema
    return {"type": "json_object", "json_schema": schema} if schema is not None else None


def _encode_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": message.result_text,
        }
    if message.role == "user" or not message.tool_calls:
        return {"role": message.role, "content": encode_content(message)}
    encoded: dict[str, Any] = {
        "role": "assistant",
        "tool_calls": encode_tool_calls(message.tool_calls),
    }
    if message.content:  # the text before the calls goes back as the tool plan it was
        encoded["tool_plan"] = message.content
    return encoded


def _usage(usage: dict[str, Any] | None) -> Usage:
    """What Cohere billed, else the raw token counts."""
    usage = usage or {}
    counts = usage.get("billed_units") or usage.get("tokens") or {}
    return Usage(
        prompt_tokens=int(counts.get("input_tokens") or 0),
        completion_tokens=int(counts.get("output_tokens") or 0),
    )


class _EventDecoder:
    """Cohere v2's chat events, until ``message-end``."""

    def __init__(self, provider: CohereProvider, model: str) -> None:
        self.provider = provider
        self.state = _StreamState(model=model)
        self.ended = False

    def decode(self, event: ServerSentEvent) -> list[StreamEvent]:
        if event.event == "message-end":
            self.ended = True
        data = event.data.strip()
        if not data or data == "[DONE]":
            return []
        provider = self.provider
        payload = provider.event_json(event.data)
        if payload.get("type") == "message-end":
            self.ended = True
            delta = payload.get("delta") or {}
            if delta.get("error") or delta.get("finish_reason") in _FAILED:
                detail = provider.redact(str(delta.get("error") or delta.get("finish_reason")))
                raise ProviderError(
                    502, f"{provider.name} failed mid-stream: {detail}", retryable=True
                )
        return self.state.events(payload)


@dataclass
class _StreamState:
    """Turns ``message-start`` … ``message-end`` events into neutral stream events."""

    model: str  # the model asked: Cohere's events name none
    call_index: dict[int, int] = field(default_factory=dict)  # event index → tool call
    response_id: str | None = None  # message-start's

    def events(self, payload: dict[str, Any]) -> list[StreamEvent]:
        kind = payload.get("type")
        delta = payload.get("delta") or {}
        message = delta.get("message") or {}
        index = payload.get("index", 0)
        if kind == "message-start":
            self.response_id = payload.get("id")
            return []
        if kind == "content-delta":
            text = (message.get("content") or {}).get("text")
            return [TextDelta(text)] if text else []
        if kind == "tool-plan-delta":  # the text the model writes before its tool calls
            plan = message.get("tool_plan")
            return [TextDelta(plan)] if plan else []
        if kind == "tool-call-start":
            call = message.get("tool_calls") or {}
            function = call.get("function") or {}
            self.call_index[index] = len(self.call_index)
            return [
                ToolCallDelta(
                    index=self.call_index[index],
                    id=call.get("id"),
                    name=function.get("name"),
                    arguments=function.get("arguments") or "",
                )
            ]
        if kind == "tool-call-delta" and index in self.call_index:
            function = (message.get("tool_calls") or {}).get("function") or {}
            arguments = function.get("arguments") or ""
            return [ToolCallDelta(index=self.call_index[index], arguments=arguments)]
        if kind == "message-end":
            given = delta.get("finish_reason") or "COMPLETE"
            finish = Finish(
                _FINISH_REASONS.get(given, "stop"),
                self.response_id,
                self.model,
                by_stop_sequence=given == "STOP_SEQUENCE",
            )
            return [finish, UsageReport(_usage(delta.get("usage")))]
        return []
