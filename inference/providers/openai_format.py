"""The OpenAI chat-completions wire format, spoken by openai, groq and deepseek."""

import base64
from typing import Any

from httpx_sse import ServerSentEvent

from core.float32 import Vector, from_numbers, unpacked
from inference.neutral.types import (
    ChatRequest,
    ChatResponse,
    Document,
    EmbeddingRequest,
    Embeddings,
    Finish,
    FinishReason,
    Image,
    Message,
    Part,
    ResponseFormat,
    Sampling,
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
from inference.providers.streaming import StreamCall
from inference.providers.toolnames import LETTERS_DIGITS_DASHES

_FINISH_REASONS: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


class OpenAIFormatProvider(Provider):
    wire = "openai"
    tool_names = LETTERS_DIGITS_DASHES
    takes_token_arrays = True

    @property
    def url(self) -> str:
        return f"{self.base_url}/chat/completions"

    def headers(self) -> dict[str, str]:
        # A self-hosted server may need no key: no header rather than an empty one.
        key = self.settings.api_key
        return {"Authorization": f"Bearer {key}"} if key else {}

    async def moderate(self, text: str, model: str) -> dict[str, Any]:
        """The first result of ``/moderations`` on ``text``: ``flagged``, ``categories``,
        ``category_scores``."""
        answer = await self.post_json(
            f"{self.base_url}/moderations", {"model": model, "input": text}
        )
        results = answer.get("results")
        if not isinstance(results, list) or not results or not isinstance(results[0], dict):
            raise ProviderError(502, f"{self.name} returned a moderation without results")
        return results[0]

    async def embed_once(self, request: EmbeddingRequest) -> Embeddings:
        """Asked in base64 (float32 bytes: a quarter of the JSON numbers' text, and no
        number to parse); a server that answers numbers anyway is read as well."""
        body: dict[str, Any] = {
            "model": request.model,
            "input": [list(tokens) for tokens in request.token_arrays] or list(request.texts),
            "encoding_format": "base64",
        }
        if request.dimensions is not None:
            body["dimensions"] = request.dimensions
        answer = await self.post_json(f"{self.base_url}/embeddings", body)
        rows = sorted(answer["data"], key=lambda row: row["index"])
        tokens = (answer.get("usage") or {}).get("prompt_tokens")
        return Embeddings(
            tuple(embedding_vector(row["embedding"]) for row in rows),
            None if tokens is None else int(tokens),
        )

    async def complete_once(self, request: ChatRequest) -> ChatResponse:
        body = await self.post_json(self.url, encode_request(request, stream=False))
        return self.reply_of(request, body)

    def batch_body(self, request: ChatRequest) -> dict[str, Any]:
        return encode_request(self.readable(request), stream=False)

    def reply_of(self, request: ChatRequest, body: dict[str, Any]) -> ChatResponse:
        try:
            choice = body["choices"][0]
            message = choice["message"]
        except (KeyError, IndexError, TypeError) as error:
            raise ProviderError(502, f"{self.name} returned a reply without choices") from error
        calls = tuple(
            ToolCall(
                id=call["id"],
                name=call["function"]["name"],
                arguments=call["function"].get("arguments") or "{}",
            )
            for call in message.get("tool_calls") or []
        )
        return ChatResponse(
            text=message.get("content") or "",
            finish_reason=_FINISH_REASONS.get(choice.get("finish_reason") or "stop", "stop"),
            usage=_usage(body.get("usage")),
            tool_calls=calls,
            logprobs=choice.get("logprobs"),
            response_id=body.get("id"),
            response_model=body.get("model"),
        )

    def stream_call(self, request: ChatRequest) -> StreamCall:
        return StreamCall(self.url, encode_request(request, stream=True), _ChunkDecoder(self))


class _ChunkDecoder:
    """``chat.completion.chunk`` events, until ``[DONE]``."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.ended = False

    def decode(self, event: ServerSentEvent) -> list[StreamEvent]:
        if _is_done(event):
            self.ended = True
            return []
        chunk = self.provider.event_json(event.data)
        if "error" in chunk:
            provider = self.provider
            detail = provider.redact(upstream_message(event.data))
            raise ProviderError(502, f"{provider.name} failed mid-stream: {detail}", retryable=True)
        return _chunk_events(chunk)


def _is_done(event: ServerSentEvent) -> bool:
    return event.data.strip() == "[DONE]"


def encode_request(request: ChatRequest, stream: bool) -> dict[str, Any]:
    messages: list[dict[str, Any]] = []
    if request.system:
        messages.append({"role": "system", "content": request.system})
    messages.extend(_encode_message(message) for message in request.messages)
    body: dict[str, Any] = {"model": request.model, "messages": messages}
    body.update(_sampling(request.sampling))
    if request.tools:
        body["tools"] = encode_tools(request.tools)
        if request.tool_choice is not None:
            body["tool_choice"] = _encode_tool_choice(request.tool_choice)
        if request.parallel_tool_calls is not None:
            body["parallel_tool_calls"] = request.parallel_tool_calls
    if request.response_format is not None:
        response_format = encode_response_format(request.response_format)
        if response_format is not None:
            body["response_format"] = response_format
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    return body


def encode_tools(tools: tuple[ToolSpec, ...]) -> list[dict[str, Any]]:
    """Function tools in the OpenAI shape, which Cohere v2 shares."""
    return [
        {
            "type": "function",
            "function": {
                "name": tool.name,
                "description": tool.description,
                "parameters": tool.parameters,
            },
        }
        for tool in tools
    ]


def _encode_tool_choice(choice: ToolChoice) -> str | dict[str, Any]:
    if choice.name is not None:
        return {"type": "function", "function": {"name": choice.name}}
    return choice.mode


def encode_tool_calls(calls: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    """An assistant turn's tool calls in the OpenAI shape, which Cohere v2 shares."""
    return [
        {
            "id": call.id,
            "type": "function",
            "function": {"name": call.name, "arguments": call.arguments},
        }
        for call in calls
    ]


def encode_response_format(response_format: ResponseFormat) -> dict[str, Any] | None:
    """JSON mode, or the schema when it has the object root the API requires."""
    if response_format.kind == "json_object":
        return {"type": "json_object"}
    schema = response_format.object_schema
    if schema is None:
        return None
    return {
        "type": "json_schema",
        "json_schema": {
            "name": response_format.name,
            "schema": schema,
            "strict": response_format.strict,
        },
    }


def _sampling(sampling: Sampling) -> dict[str, Any]:
    """Every parameter under its own name, as the client gave it."""
    encoded: dict[str, Any] = {
        name: value
        for name in _PASSED_AS_THEY_ARE
        if (value := getattr(sampling, name)) is not None
    }
    if sampling.max_tokens is not None:
        encoded[sampling.max_tokens_name] = sampling.max_tokens
    if sampling.stop:
        encoded["stop"] = list(sampling.stop)
    return encoded | dict(sampling.passed_to("openai").fields)


_PASSED_AS_THEY_ARE = (
    "temperature",
    "top_p",
    "seed",
    "frequency_penalty",
    "presence_penalty",
    "reasoning_effort",
    "logprobs",
    "top_logprobs",
)


def encode_content(message: Message) -> str | list[dict[str, Any]]:
    """Text, or text, image and file parts in order (the shape Cohere v2 shares; it is
    sent no files)."""
    if not message.with_media:
        return message.content
    return [_encode_part(part) for part in message.parts]


def _encode_part(part: Part) -> dict[str, Any]:
    if isinstance(part, Image):
        return {"type": "image_url", "image_url": {"url": part.url}}
    if isinstance(part, Document):
        data = f"data:{part.media_type};base64,{part.data}"
        return {"type": "file", "file": {"filename": part.filename, "file_data": data}}
    return {"type": "text", "text": part if isinstance(part, str) else part.text}


def _encode_message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": message.result_text,
        }
    encoded: dict[str, Any] = {"role": message.role, "content": encode_content(message)}
    if message.tool_calls:
        encoded["content"] = message.content or None
        encoded["tool_calls"] = encode_tool_calls(message.tool_calls)
    return encoded


def _chunk_events(chunk: dict[str, Any]) -> list[StreamEvent]:
    events: list[StreamEvent] = []
    for choice in chunk.get("choices") or []:
        delta = choice.get("delta") or {}
        if delta.get("content"):
            events.append(TextDelta(delta["content"], logprobs=choice.get("logprobs")))
        for call in delta.get("tool_calls") or []:
            function = call.get("function") or {}
            events.append(
                ToolCallDelta(
                    index=call.get("index", 0),
                    id=call.get("id"),
                    name=function.get("name"),
                    arguments=function.get("arguments") or "",
                )
            )
        if choice.get("finish_reason"):
            reason = _FINISH_REASONS.get(choice["finish_reason"], "stop")
            events.append(Finish(reason, chunk.get("id"), chunk.get("model")))
    if chunk.get("usage"):
        events.append(UsageReport(_usage(chunk["usage"])))
    return events


def embedding_vector(embedding: str | list[float]) -> Vector:
    """An embedding as it came: base64 of little-endian float32, or JSON numbers."""
    if isinstance(embedding, str):
        return unpacked(base64.b64decode(embedding, validate=True))
    return from_numbers(embedding)


def _usage(usage: dict[str, Any] | None) -> Usage:
    if not usage:
        return Usage()
    cached = _detail(usage, "prompt_tokens_details", "cached_tokens")
    if cached is None and usage.get("prompt_cache_hit_tokens") is not None:
        cached = int(usage["prompt_cache_hit_tokens"])  # DeepSeek's name for them
    return Usage(
        prompt_tokens=int(usage.get("prompt_tokens") or 0),
        completion_tokens=int(usage.get("completion_tokens") or 0),
        cached_tokens=cached,
        reasoning_tokens=_detail(usage, "completion_tokens_details", "reasoning_tokens"),
    )


def _detail(usage: dict[str, Any], details: str, name: str) -> int | None:
    value = (usage.get(details) or {}).get(name)
    return int(value) if value is not None else None
