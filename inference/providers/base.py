"""What every wire-format module shares: HTTP calls, SSE reading and error mapping."""

import asyncio
import json
import math
import re
import ssl
from dataclasses import replace
from functools import lru_cache
from typing import Any

import httpx

from agents.schema import LimitsConfig, ProviderConfig
from core import fastjson
from core.bodylimit import MIB
from core.providerkinds import PROVIDER_KINDS, WireFormat
from core.traceparent import outgoing_headers
from core.upstreamclock import upstream_wait
from inference.neutral.calls import Attempt
from inference.neutral.errors import ApiError
from inference.neutral.types import (
    THINKING_BUDGETS,
    ChatRequest,
    ChatResponse,
    Document,
    EmbeddingRequest,
    Embeddings,
    Message,
    Usage,
)
from inference.providers.streaming import Noted, ProviderStream, StreamCall
from inference.providers.toolnames import ToolNameRule

# Upstream statuses worth another try: the request may succeed as it is a moment later.
RETRYABLE_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504, 529})
# How the providers say a prompt does not fit the model (OpenAI's code, Anthropic's
# "prompt is too long", Gemini's and Cohere's token counts): another model may take it.
_CONTEXT_TOO_LONG = re.compile(
    r"context_length_exceeded|context length|context window|prompt is too long|"
    r"too many tokens|maximum number of tokens|input token count|maximum context",
    re.IGNORECASE,
)


class ProviderError(Exception):
    """An upstream failure, already phrased as the OpenAI-style error the client gets.

    ``usage`` is what the failed call had already spent, so it can still be billed.
    ``retryable``: another try (of this or another deployment) may succeed;
    ``context_too_long``: the prompt does not fit this model, so a fallback is tried at
    once. ``retry_after``: the upstream's wait, in seconds. ``attempts``: the failed
    call's upstream attempts, as routing made them (the request log shows them).
    ``final``: no retry of the client's request can succeed (``ApiError.final``).
    """

    def __init__(
        self,
        status: int,
        message: str,
        code: str = "upstream_error",
        retry_after: float | None = None,
        error_type: str = "upstream_error",
        usage: Usage | None = None,
        *,
        retryable: bool = False,
        context_too_long: bool = False,
        final: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.retry_after = retry_after
        self.error_type = error_type
        self.usage = usage or Usage()
        self.retryable = retryable
        self.context_too_long = context_too_long
        self.final = final
        self.attempts: tuple[Attempt, ...] = ()

    def as_api_error(self, headers: dict[str, str] | None = None) -> ApiError:
        """The failure as the client is told of it, with the upstream's wait as
        ``Retry-After`` (whole seconds) beside ``headers``."""
        told = dict(headers or {})
        if self.retry_after is not None:
            told["Retry-After"] = str(math.ceil(self.retry_after))
        return ApiError(
            self.status,
            self.message,
            code=self.code,
            error_type=self.error_type,
            headers=told,
            final=self.final,
        )


class TurnStopped(ProviderError):
    """A failure that ends the whole turn, at whatever level it happens (a subagent's
    caller gets this, not a tool error): one of the turn's bounds reached, or a call the
    caller's limits refused."""


# What decoding a provider's JSON raises when a field is missing or has the wrong type.
UNREADABLE = (KeyError, IndexError, TypeError, ValueError, AttributeError)


class Provider:
    """One configured provider, speaking one wire format. Subclasses declare the wire
    format they speak (``wire``; the kinds of it are in ``core.providerkinds``) and
    implement ``complete_once`` and ``stream_call`` (what a streamed call sends, and the
    decoder of its events: ``inference.providers.streaming``), and ``embed_once`` where
    the format serves embeddings, ``count_tokens`` where it counts.

    Each call is timed by phase (``providers.<name>.timeout``): connecting, the first byte
    of the response, the gap between two stream events, and the call as a whole."""

    wire: WireFormat
    tool_names: ToolNameRule
    # Whether it embeds inputs a client tokenized itself (token arrays): only a format
    # whose tokenizer the clients use (OpenAI's).
    takes_token_arrays = False
    unreadable_errors: tuple[type[Exception], ...] = UNREADABLE

    def __init__(
        self, name: str, kind: str, client: httpx.AsyncClient, settings: ProviderConfig
    ) -> None:
        self.name = name
        self.kind = kind
        self.spec = PROVIDER_KINDS[kind]
        self.client = client
        self.settings = settings
        self.base_url = (settings.base_url or self.spec.base_url).rstrip("/")
        self.timeouts = settings.timeouts
        self._http_timeout = httpx.Timeout(None, connect=self.timeouts.connect)
        # The largest body a call sends (limits.max_upstream_body_mb), set by the registry.
        self.max_body_bytes = int(LimitsConfig().max_upstream_body_mb * MIB)

    @property
    def takes_documents(self) -> bool:
        """Whether PDFs go to it as documents: its kind's default, or ``documents:``."""
        configured = self.settings.documents
        return self.spec.documents if configured is None else configured

    def readable(self, request: ChatRequest) -> ChatRequest:
        """``request`` as this provider can take it: text-like files as text parts, and
        PDFs as their text unless it takes documents."""
        if not any(message.with_media for message in request.messages):
            return request
        return replace(
            request,
            messages=tuple(
                _readable(message, self.takes_documents) for message in request.messages
            ),
        )

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """The whole reply; one the module cannot read is a 502, not a crash."""
        try:
            return await self.complete_once(self.readable(request))
        except UNREADABLE as error:
            raise self.unreadable(error) from error

    async def open_stream(
        self, request: ChatRequest, noted: Noted, held: bool = False
    ) -> ProviderStream:
        """The reply as a stream, read up to its first content event (``held``: to its
        end); ``noted`` sees each batch of its events first. A stream cut before the
        reply finished is a 502, one the module cannot read too."""
        try:
            call = self.stream_call(self.readable(request))
        except UNREADABLE as error:
            raise self.unreadable(error) from error
        stream = ProviderStream(self, call, noted)
        await stream.open(held)
        return stream

    async def complete_once(self, request: ChatRequest) -> ChatResponse:
        raise NotImplementedError

    def batch_body(self, request: ChatRequest) -> dict[str, Any]:
        """The body ``complete_once`` would send, for a line of a provider batch (kinds
        with a batch API: ``core.providerkinds.NATIVE_BATCH_KINDS``)."""
        raise NotImplementedError

    def reply_of(self, request: ChatRequest, body: dict[str, Any]) -> ChatResponse:
        """The reply ``body`` (as ``complete_once`` receives it) to ``request`` says."""
        raise NotImplementedError

    def batch_reply(self, request: ChatRequest, body: dict[str, Any]) -> ChatResponse:
        """The reply of a provider batch's line to ``request``; one the module cannot read
        is a 502, as a call's is."""
        try:
            return self.reply_of(request, body)
        except UNREADABLE as error:
            raise self.unreadable(error) from error

    @classmethod
    def embeds(cls) -> bool:
        """Whether the wire format serves embeddings."""
        return cls.embed_once is not Provider.embed_once

    async def count_tokens(self, request: ChatRequest) -> int | None:
        """The provider's own count of the request's input tokens (None: it has none)."""
        return None

    async def embed(self, request: EmbeddingRequest) -> Embeddings:
        """Vectors of the texts; a reply the module cannot read is a 502."""
        try:
            embeddings = await self.embed_once(request)
        except UNREADABLE as error:
            raise self.unreadable(error) from error
        if len(embeddings.vectors) != request.count:
            raise ProviderError(
                502,
                f"{self.name} returned {len(embeddings.vectors)} vectors for "
                f"{request.count} inputs",
            )
        return embeddings

    async def embed_once(self, request: EmbeddingRequest) -> Embeddings:
        raise ProviderError(
            400,
            f"{self.name} ({self.kind}) serves no embeddings",
            code="unsupported_model",
            error_type="invalid_request_error",
        )

    def stream_call(self, request: ChatRequest) -> StreamCall:
        """What a streamed call sends, and the decoder of its events."""
        raise NotImplementedError

    def cut_short(self) -> "ProviderError":
        return ProviderError(
            502, f"{self.name} ended the stream before the reply was complete", retryable=True
        )

    def unreadable(self, error: Exception) -> ProviderError:
        return ProviderError(
            502, f"{self.name} sent a reply the gateway cannot read ({type(error).__name__})"
        )

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def _json_headers(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        return {
            **self.headers(),
            "Content-Type": "application/json",
            **outgoing_headers(),
            **(extra or {}),
        }

    def build(
        self, url: str, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> httpx.Request:
        """The call's HTTP request; a body over ``max_body_bytes`` is a 413, not sent."""
        content = fastjson.dumps(body)
        if len(content) > self.max_body_bytes:
            raise ProviderError(
                413,
                f"The request to {self.name} would be {len(content)} bytes, more than "
                f"limits.max_upstream_body_mb ({self.max_body_bytes} bytes): send less (shorter "
                "history or files, fewer tools)",
                code="request_too_large",
                error_type="invalid_request_error",
            )
        return self.client.build_request(
            "POST",
            _parsed_url(url),
            content=content,
            headers=self._json_headers(headers),
            timeout=self._http_timeout,
        )

    async def opened(self, request: httpx.Request, end: float) -> httpx.Response:
        """The upstream's response, its body still to read; a failure status raised."""
        until, phase = self.deadline(end, self.timeouts.first_byte, "first_byte")
        try:
            async with asyncio.timeout_at(until):
                response = await self.client.send(request, stream=True)
                if response.status_code >= 400:
                    try:
                        text = (await response.aread()).decode(errors="replace")
                    finally:
                        await response.aclose()
                    raise self.failed(response.status_code, text, response.headers)
        except TimeoutError:
            raise self.timed_out(phase) from None
        return response

    async def post_json(
        self, url: str, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> dict[str, Any]:
        """The JSON body of a call; ``headers`` are this call's own, beside the provider's."""
        end = asyncio.get_running_loop().time() + self.timeouts.total
        try:
            with upstream_wait():
                response = await self.opened(self.build(url, body, headers), end)
                until, phase = self.deadline(end, self.timeouts.idle, "idle")
                try:
                    async with asyncio.timeout_at(until):
                        content = await response.aread()
                except TimeoutError:
                    raise self.timed_out(phase) from None
                finally:
                    await response.aclose()
        except httpx.HTTPError as error:
            raise self.transport_error(error) from error
        try:
            data: dict[str, Any] = fastjson.loads(content)  # an object, by the API
        except ValueError as error:
            raise ProviderError(502, f"{self.name} returned a body that is not JSON") from error
        return data

    @staticmethod
    def deadline(
        end: float, seconds: float, phase: str, now: float | None = None
    ) -> tuple[float, str]:
        """When a wait of ``seconds`` must end, and the phase that ends it (``total`` when
        the call's end comes first)."""
        if now is None:
            now = asyncio.get_running_loop().time()
        return (now + seconds, phase) if now + seconds < end else (end, "total")

    def timed_out(self, phase: str) -> ProviderError:
        """First byte: another try may be quicker. Idle or total: the call was answering, so
        it ends here (a model that stalls mid-reply would stall again)."""
        return ProviderError(
            504,
            f"{self.name} did not answer in time (timeout.{phase})",
            code="upstream_timeout",
            retryable=phase == "first_byte",
        )

    def event_json(self, data: str) -> Any:
        try:
            return fastjson.loads(data)
        except ValueError as error:
            raise ProviderError(502, f"{self.name} sent a stream frame that is not JSON") from error

    def transport_error(self, error: httpx.HTTPError) -> ProviderError:
        """Connecting failed, or the connection broke: both worth another try."""
        if isinstance(error, httpx.TimeoutException):
            return ProviderError(
                504,
                f"{self.name} did not answer in time (timeout.connect)",
                code="upstream_timeout",
                retryable=True,
            )
        if _certificate_failure(error):
            return ProviderError(
                502,
                f"could not reach {self.name}: its TLS certificate did not verify against "
                "the gateway's trusted certificates (SSL_CERT_FILE, SSL_CERT_DIR)",
                retryable=True,  # another deployment may be served by another host
            )
        reason = type(error).__name__
        return ProviderError(502, f"could not reach {self.name}: {reason}", retryable=True)

    def failed(self, status: int, text: str, headers: httpx.Headers) -> ProviderError:
        """The error for a failure status, marked retryable (a rate limit or overload
        whatever its status, as Gemini's RESOURCE_EXHAUSTED) or context-too-long."""
        error = self.status_error(status, text, headers)
        error.retryable = error.retryable or status in RETRYABLE_STATUSES
        error.context_too_long = status in (400, 413, 422) and bool(_CONTEXT_TOO_LONG.search(text))
        return error

    def status_error(self, status: int, text: str, headers: httpx.Headers) -> ProviderError:
        detail = self.redact(upstream_message(text))
        if status == 429:
            return self.rate_limited(detail, retry_after_header(headers))
        if status in (401, 403):
            return self.auth_failed(detail)
        if status in (400, 404, 413, 422):
            return ProviderError(
                400,
                f"{self.name} rejected the request: {detail}",
                code="upstream_bad_request",
                error_type="invalid_request_error",
            )
        if status in (503, 529):
            return self.overloaded(detail)
        return ProviderError(502, f"{self.name} failed with status {status}: {detail}")

    def rate_limited(self, detail: str, retry_after: float | None) -> ProviderError:
        return ProviderError(
            429,
            f"{self.name} rate limit reached: {detail}",
            code="upstream_rate_limited",
            retry_after=retry_after,
            error_type="rate_limit_exceeded",
            retryable=True,
        )

    def auth_failed(self, detail: str) -> ProviderError:
        return ProviderError(
            502, f"{self.name} rejected the gateway's API key: {detail}", code="upstream_auth"
        )

    def overloaded(self, detail: str) -> ProviderError:
        return ProviderError(
            503, f"{self.name} is overloaded: {detail}", code="upstream_overloaded", retryable=True
        )

    def redact(self, text: str) -> str:
        key = self.settings.api_key
        return text.replace(key, "[redacted]") if key else text


def upstream_message(text: str) -> str:
    """The human part of a provider's error body, whichever of the usual shapes it has."""
    try:
        body = json.loads(text)
    except ValueError:
        return text.strip()[:500] or "no detail"
    candidates = [body]
    if isinstance(body, list) and body:
        candidates = [body[0]]
    for candidate in candidates:
        if isinstance(candidate, dict):
            error = candidate.get("error", candidate)
            if isinstance(error, dict) and isinstance(message := error.get("message"), str):
                return message
            if isinstance(error, str):
                return error
            if isinstance(message := candidate.get("message"), str):
                return message
    return text.strip()[:500]


def thinking_budget(effort: str | None) -> int | None:
    return THINKING_BUDGETS.get(effort) if effort is not None else None


# An upstream's wait longer than this is passed on as this (one day).
MAX_RETRY_AFTER = 86400


def retry_after_header(headers: httpx.Headers) -> float | None:
    value = headers.get("retry-after")
    return retry_seconds(value) if value is not None else None


def retry_seconds(text: str) -> float | None:
    """Seconds to wait from an upstream's untrusted number of seconds: ignored (None)
    unless finite and not negative, at most ``MAX_RETRY_AFTER``."""
    try:
        seconds = float(text)
    except ValueError:
        return None
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return min(float(MAX_RETRY_AFTER), seconds)


def _certificate_failure(error: BaseException) -> bool:
    """Whether the TLS handshake failed on the upstream's certificate (httpx wraps
    httpcore's error, which wraps the ``ssl`` module's)."""
    cause: BaseException | None = error
    while cause is not None:
        if isinstance(cause, ssl.SSLCertVerificationError):
            return True
        cause = cause.__cause__ or cause.__context__
    return False


@lru_cache(maxsize=1024)
def _parsed_url(url: str) -> httpx.URL:
    """``url`` parsed once: httpx parses a URL given as text on every request (about
    40 us, half of building the request)."""
    return httpx.URL(url)


def _readable(message: Message, documents: bool) -> Message:
    """A message with its documents as text where they must be (a message left with text
    only is plain text again: the encoders send its ``content``)."""
    if not message.with_media:
        return message
    parts = tuple(
        part.as_text if isinstance(part, Document) and not (documents and part.is_pdf) else part
        for part in message.parts
    )
    if all(isinstance(part, str) for part in parts):
        return replace(message, content="".join(str(part) for part in parts), parts=())
    return replace(message, parts=parts)
