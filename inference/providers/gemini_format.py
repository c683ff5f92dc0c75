"""The Gemini API (``models/{model}:generateContent`` and ``:streamGenerateContent``)."""

import json
import mimetypes
import uuid
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urlsplit

import httpx
from httpx_sse import ServerSentEvent

from core.float32 import from_numbers
from inference.neutral.types import (
    Block,
    ChatRequest,
    ChatResponse,
    Document,
    EmbeddingRequest,
    Embeddings,
    Finish,
    FinishReason,
    Message,
    Part,
    ResponseFormat,
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
    retry_after_header,
    retry_seconds,
    thinking_budget,
    upstream_message,
)
from inference.providers.gemini_schema import to_gemini_schema
from inference.providers.streaming import StreamCall
from inference.providers.toolnames import GEMINI_NAMES

_FINISH_REASONS: dict[str, FinishReason] = {
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "SAFETY": "content_filter",
    "RECITATION": "content_filter",
    "BLOCKLIST": "content_filter",
    "PROHIBITED_CONTENT": "content_filter",
    "SPII": "content_filter",
    "IMAGE_SAFETY": "content_filter",
}
# ErrorInfo reasons and statuses of a key Gemini does not accept (an invalid key is a 400).
_AUTH_REASONS = {"API_KEY_INVALID", "API_KEY_EXPIRED", "API_KEY_SERVICE_BLOCKED"}
_AUTH_STATUSES = {"UNAUTHENTICATED", "PERMISSION_DENIED"}


class GeminiProvider(Provider):
    wire = "gemini"
    tool_names = GEMINI_NAMES

    def model_url(self, model: str, method: str) -> str:
        return f"{self.base_url}/v1beta/models/{model.removeprefix('models/')}:{method}"

    def headers(self) -> dict[str, str]:
        return {"x-goog-api-key": self.settings.api_key}

    async def embed_once(self, request: EmbeddingRequest) -> Embeddings:
        model = f"models/{request.model.removeprefix('models/')}"
        task = "RETRIEVAL_QUERY" if request.purpose == "query" else "RETRIEVAL_DOCUMENT"
        requests = []
        for text in request.texts:
            one: dict[str, Any] = {
                "model": model,
                "content": {"parts": [{"text": text}]},
                "taskType": task,
            }
            if request.dimensions is not None:
                one["outputDimensionality"] = request.dimensions
            requests.append(one)
        url = self.model_url(request.model, "batchEmbedContents")
        answer = await self.post_json(url, {"requests": requests})
        vectors = tuple(from_numbers(item["values"]) for item in answer["embeddings"])
        return Embeddings(vectors, None)  # Gemini reports no usage for embeddings

    async def count_tokens(self, request: ChatRequest) -> int | None:
        """Gemini's own count of what the request would send."""
        model = f"models/{request.model.removeprefix('models/')}"
        asked = {"generateContentRequest": {"model": model, **encode_request(request)}}
        answer = await self.post_json(self.model_url(request.model, "countTokens"), asked)
        tokens = answer.get("totalTokens")
        if not isinstance(tokens, int):
            raise ProviderError(502, f"{self.name} returned a count without totalTokens")
        return tokens

    async def complete_once(self, request: ChatRequest) -> ChatResponse:
        url = self.model_url(request.model, "generateContent")
        body = await self.post_json(url, encode_request(request))
        reply = _Reply()
        events = reply.read(body)
        text = "".join(event.text for event in events if isinstance(event, TextDelta))
        return ChatResponse(
            text=text,
            finish_reason=reply.finish_reason,
            usage=reply.usage,
            tool_calls=tuple(reply.calls),
            response_id=body.get("responseId"),
            response_model=body.get("modelVersion"),
        )

    def stream_call(self, request: ChatRequest) -> StreamCall:
        url = self.model_url(request.model, "streamGenerateContent") + "?alt=sse"
        return StreamCall(url, encode_request(request), _ChunkDecoder(self))

    def status_error(self, status: int, text: str, headers: httpx.Headers) -> ProviderError:
        error = _error_object(text)
        detail = self.redact(upstream_message(text))
        reasons = {item.get("reason") for item in _details(error)}
        if reasons & _AUTH_REASONS or error.get("status") in _AUTH_STATUSES:
            return self.auth_failed(detail)
        if status == 429 or error.get("status") == "RESOURCE_EXHAUSTED":
            return self.rate_limited(detail, retry_after_header(headers) or _retry_delay(error))
        return super().status_error(status, text, headers)


def encode_request(request: ChatRequest) -> dict[str, Any]:
    body: dict[str, Any] = {"contents": encode_contents(request.messages)}
    if request.system:
        body["systemInstruction"] = {"parts": [{"text": request.system}]}
    if request.tools:
        declarations = [
            {
                "name": tool.name,
                "description": tool.description,
                "parametersJsonSchema": tool.parameters,
            }
            for tool in request.tools
        ]
        body["tools"] = [{"functionDeclarations": declarations}]
        if request.tool_choice is not None:
            body["toolConfig"] = {"functionCallingConfig": _calling_config(request.tool_choice)}
    config = _generation_config(request)
    extras = request.sampling.passed_to("gemini").fields
    if "thinkingConfig" in extras:  # the client's own choice wins
        config["thinkingConfig"] = extras["thinkingConfig"]
    if config:
        body["generationConfig"] = config
    if "safetySettings" in extras:
        body["safetySettings"] = extras["safetySettings"]
    return body


_CALLING_MODES = {"auto": "AUTO", "required": "ANY", "none": "NONE"}
UNSIGNED_CALL = "skip_thought_signature_validator"


def _calling_config(choice: ToolChoice) -> dict[str, Any]:
    """Gemini has no control of parallel calls; a named tool is ANY of that one."""
    if choice.name is not None:
        return {"mode": "ANY", "allowedFunctionNames": [choice.name]}
    return {"mode": _CALLING_MODES[choice.mode]}


def encode_contents(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """``user``/``model`` turns of parts; function responses ride in the user turn."""
    call_names = {call.id: call.name for message in messages for call in message.tool_calls}
    contents: list[dict[str, Any]] = []
    for message in messages:
        role = "model" if message.role == "assistant" else "user"
        parts = _parts(message, call_names)
        if not parts:
            continue
        if contents and contents[-1]["role"] == role:
            contents[-1]["parts"].extend(parts)
        else:
            contents.append({"role": role, "parts": parts})
    return contents


def _parts(message: Message, call_names: dict[str, str]) -> list[dict[str, Any]]:
    if message.role == "tool":
        name = message.name or call_names.get(message.tool_call_id or "", "")
        response = {
            "id": message.tool_call_id,
            "name": name,
            "response": _result(message.result_text),
        }
        return [{"functionResponse": response}]
    parts: list[dict[str, Any]] = []
    if message.with_media:
        parts.extend(_content_part(part) for part in message.parts)
    elif message.content:
        parts.append({"text": message.content})
    for position, call in enumerate(message.tool_calls):
        part: dict[str, Any] = {
            "functionCall": {
                "id": call.id,
                "name": call.name,
                "args": arguments_object(call.arguments),
            }
        }
        signature = call.signature
        if position == 0 and not signature:
            # Gemini 3 refuses a turn whose first call has no signature; calls the model
            # did not make here (a client's own history, an expired exchange) get the
            # value Gemini documents for such calls.
            signature = UNSIGNED_CALL
        if signature:
            part["thoughtSignature"] = signature
        parts.append(part)
    return parts


def _content_part(part: Part) -> dict[str, Any]:
    if isinstance(part, str):
        return {"text": part}
    if isinstance(part, Block):
        return {"text": part.text}
    if isinstance(part, Document):
        return {"inlineData": {"mimeType": part.media_type, "data": part.data}}
    inline = part.inline
    if inline is not None:
        return {"inlineData": {"mimeType": inline[0], "data": inline[1]}}
    mime_type = mimetypes.guess_type(urlsplit(part.url).path)[0] or "image/jpeg"
    return {"fileData": {"mimeType": mime_type, "fileUri": part.url}}


def _result(content: str) -> dict[str, Any]:
    """A function response must be an object: a JSON object result as is, else wrapped."""
    try:
        value = json.loads(content)
    except ValueError:
        value = None
    return value if isinstance(value, dict) else {"result": content}


def _generation_config(request: ChatRequest) -> dict[str, Any]:
    sampling = request.sampling
    config: dict[str, Any] = {}
    for name, value in (
        ("temperature", sampling.temperature),
        ("topP", sampling.top_p),
        ("topK", sampling.top_k),
        ("maxOutputTokens", sampling.max_tokens),
        ("seed", sampling.seed),
        ("frequencyPenalty", sampling.frequency_penalty),
        ("presencePenalty", sampling.presence_penalty),
    ):
        if value is not None:
            config[name] = value
    if sampling.stop:
        config["stopSequences"] = list(sampling.stop)
    budget = thinking_budget(sampling.reasoning_effort)
    if budget is not None:
        config["thinkingConfig"] = {"thinkingBudget": budget}
    if request.response_format is not None and not request.tools:
        # Gemini refuses a JSON response type beside function declarations: with tools,
        # the instruction alone asks for JSON (and the reply is validated all the same).
        config.update(_response_config(request.response_format))
    return config


def _response_config(response_format: ResponseFormat) -> dict[str, Any]:
    config: dict[str, Any] = {"responseMimeType": "application/json"}
    if response_format.schema is None:
        return config
    converted = to_gemini_schema(response_format.schema)
    if converted is not None:
        config["responseSchema"] = converted
    else:
        config["responseJsonSchema"] = response_format.schema
    return config


class _ChunkDecoder:
    """``GenerateContentResponse`` chunks, until the body ends."""

    ended = False  # Gemini names no last event

    def __init__(self, provider: GeminiProvider) -> None:
        self.provider = provider
        self.reply = _Reply()

    def decode(self, event: ServerSentEvent) -> list[StreamEvent]:
        if not event.data.strip():
            return []
        provider = self.provider
        chunk = provider.event_json(event.data)
        if isinstance(chunk, dict) and "error" in chunk:
            detail = provider.redact(upstream_message(event.data))
            raise ProviderError(502, f"{provider.name} failed mid-stream: {detail}", retryable=True)
        return self.reply.read(chunk)


@dataclass
class _Reply:
    """Reads ``GenerateContentResponse`` bodies: one whole reply, or a stream's chunks."""

    finish_reason: FinishReason = "stop"
    usage: Usage = field(default_factory=Usage)
    calls: list[ToolCall] = field(default_factory=list)

    def read(self, body: dict[str, Any]) -> list[StreamEvent]:
        events: list[StreamEvent] = []
        candidates = body.get("candidates") or []
        candidate = candidates[0] if candidates else {}
        for part in (candidate.get("content") or {}).get("parts") or []:
            if part.get("text") and not part.get("thought"):
                events.append(TextDelta(part["text"]))
            elif "functionCall" in part:
                events.append(self._call(part))
        reason = candidate.get("finishReason")
        if (body.get("promptFeedback") or {}).get("blockReason"):
            reason = "SAFETY"
        if reason:
            self.finish_reason = _FINISH_REASONS.get(reason, "stop")
            if self.calls:
                self.finish_reason = "tool_calls"
            events.append(
                Finish(self.finish_reason, body.get("responseId"), body.get("modelVersion"))
            )
        if body.get("usageMetadata"):
            self.usage = _usage(body["usageMetadata"])
            events.append(UsageReport(self.usage))
        return events

    def _call(self, part: dict[str, Any]) -> ToolCallDelta:
        function = part["functionCall"]
        call = ToolCall(
            # Older models leave the id out; the tool loop needs one to pair the result.
            id=function.get("id") or f"call_{uuid.uuid4().hex[:24]}",
            name=function["name"],
            arguments=json.dumps(function.get("args") or {}),
            signature=part.get("thoughtSignature"),
        )
        self.calls.append(call)
        return ToolCallDelta(
            index=len(self.calls) - 1,
            id=call.id,
            name=call.name,
            arguments=call.arguments,
            signature=call.signature,
        )


def _usage(metadata: dict[str, Any]) -> Usage:
    # Thinking tokens are billed as output.
    thoughts = metadata.get("thoughtsTokenCount")
    cached = metadata.get("cachedContentTokenCount")
    completion = int(metadata.get("candidatesTokenCount") or 0) + int(thoughts or 0)
    return Usage(
        prompt_tokens=int(metadata.get("promptTokenCount") or 0),
        completion_tokens=completion,
        cached_tokens=int(cached) if cached is not None else None,
        reasoning_tokens=int(thoughts) if thoughts is not None else None,
    )


def _error_object(text: str) -> dict[str, Any]:
    try:
        body = json.loads(text)
    except ValueError:
        return {}
    if isinstance(body, list) and body:
        body = body[0]
    error = body.get("error") if isinstance(body, dict) else None
    return error if isinstance(error, dict) else {}


def _details(error: dict[str, Any]) -> list[dict[str, Any]]:
    details = error.get("details")
    return [item for item in details if isinstance(item, dict)] if isinstance(details, list) else []


def _retry_delay(error: dict[str, Any]) -> float | None:
    """Gemini's ``RetryInfo`` detail (``"retryDelay": "37s"``); it sends no Retry-After."""
    for item in _details(error):
        delay = item.get("retryDelay")
        if isinstance(delay, str) and delay.endswith("s"):
            return retry_seconds(delay[:-1])
    return None
