"""What every wire-format module shares: HTTP calls, SSE reading and error mapping."""

import json
import math
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import AsyncExitStack, aclosing
from typing import Any

import httpx
from httpx_sse import EventSource, ServerSentEvent

from agents.schema import ProviderConfig
from core import fastjson
from core.upstreamclock import upstream_wait
from inference.providers.toolnames import ToolNameRule
from inference.providers.types import ChatRequest, ChatResponse, Finish, StreamEvent, Usage


class ProviderError(Exception):
    """An upstream failure, already phrased as the OpenAI-style error the client gets.

    ``usage`` is what the failed call had already spent (e.g. replies that never
    validated), so it can still be billed.
    """

    def __init__(
        self,
        status: int,
        message: str,
        code: str = "upstream_error",
        retry_after: int | None = None,
        error_type: str = "upstream_error",
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.retry_after = retry_after
        self.error_type = error_type
        self.usage = usage or Usage()


# What decoding a provider's JSON raises when a field is missing or has the wrong type.
_UNREADABLE = (KeyError, IndexError, TypeError, ValueError, AttributeError)


class Provider:
    """One wire format. Subclasses implement ``complete_once`` and ``stream_events``."""

    default_base_urls: dict[str, str] = {}
    tool_names: ToolNameRule

    def __init__(self, kind: str, client: httpx.AsyncClient, settings: ProviderConfig) -> None:
        self.kind = kind
        self.client = client
        self.settings = settings
        self.base_url = (settings.base_url or self.default_base_urls[kind]).rstrip("/")

    async def complete(self, request: ChatRequest) -> ChatResponse:
        """The whole reply; one the module cannot read is a 502, not a crash."""
        try:
            return await self.complete_once(request)
        except _UNREADABLE as error:
            raise self._unreadable(error) from error

    async def stream(self, request: ChatRequest) -> AsyncIterator[StreamEvent]:
        """The reply as stream events; a stream cut before the reply finished is a 502."""
        finished = False
        try:
            async with aclosing(self.stream_events(request)) as events:
                async for event in events:
                    finished = finished or isinstance(event, Finish)
                    yield event
        except _UNREADABLE as error:
            raise self._unreadable(error) from error
        if not finished:
            raise ProviderError(502, f"{self.kind} ended the stream before the reply was complete")

    async def complete_once(self, request: ChatRequest) -> ChatResponse:
        raise NotImplementedError

    def stream_events(self, request: ChatRequest) -> AsyncGenerator[StreamEvent]:
        raise NotImplementedError

    def _unreadable(self, error: Exception) -> ProviderError:
        return ProviderError(
            502, f"{self.kind} sent a reply the gateway cannot read ({type(error).__name__})"
        )

    def headers(self) -> dict[str, str]:
        raise NotImplementedError

    def _json_headers(self) -> dict[str, str]:
        return {**self.headers(), "Content-Type": "application/json"}

    async def post_json(self, url: str, body: dict[str, Any]) -> dict[str, Any]:
        try:
            with upstream_wait():
                response = await self.client.post(
                    url,
                    content=fastjson.dumps(body),
                    headers=self._json_headers(),
                    timeout=self.settings.timeout,
                )
        except httpx.HTTPError as error:
            raise self._transport_error(error) from error
        if response.status_code >= 400:
            raise self.status_error(response.status_code, response.text, response.headers)
        try:
            data: dict[str, Any] = fastjson.loads(response.content)  # an object, by the API
        except ValueError as error:
            raise ProviderError(502, f"{self.kind} returned a body that is not JSON") from error
        return data

    async def post_sse(self, url: str, body: dict[str, Any]) -> AsyncIterator[ServerSentEvent]:
        """Yield the server-sent events of a streamed call; the connection closes with the loop.

        Only the waits for the upstream count as upstream time, not the time the caller
        takes between two events."""
        stream = self.client.stream(
            "POST",
            url,
            content=fastjson.dumps(body),
            headers=self._json_headers(),
            timeout=self.settings.timeout,
        )
        try:
            async with AsyncExitStack() as exits:
                with upstream_wait():
                    response = await exits.enter_async_context(stream)
                    if response.status_code >= 400:
                        text = (await response.aread()).decode(errors="replace")
                        raise self.status_error(response.status_code, text, response.headers)
                events = await exits.enter_async_context(
                    aclosing(EventSource(response).aiter_sse())
                )
                while True:
                    with upstream_wait():
                        event = await anext(events, None)
                    if event is None:
                        return
                    yield event
        except httpx.HTTPError as error:
            raise self._transport_error(error) from error

    def event_json(self, data: str) -> Any:
        try:
            return fastjson.loads(data)
        except ValueError as error:
            raise ProviderError(502, f"{self.kind} sent a stream frame that is not JSON") from error

    def _transport_error(self, error: httpx.HTTPError) -> ProviderError:
        if isinstance(error, httpx.TimeoutException):
            return ProviderError(
                504, f"{self.kind} did not answer in time", code="upstream_timeout"
            )
        reason = type(error).__name__
        return ProviderError(502, f"could not reach {self.kind}: {reason}")

    def status_error(self, status: int, text: str, headers: httpx.Headers) -> ProviderError:
        detail = self.redact(upstream_message(text))
        if status == 429:
            return self.rate_limited(detail, retry_after_header(headers))
        if status in (401, 403):
            return self.auth_failed(detail)
        if status in (400, 404, 413, 422):
            return ProviderError(
                400,
                f"{self.kind} rejected the request: {detail}",
                code="upstream_bad_request",
                error_type="invalid_request_error",
            )
        if status in (503, 529):
            return self.overloaded(detail)
        return ProviderError(502, f"{self.kind} failed with status {status}: {detail}")

    def rate_limited(self, detail: str, retry_after: int | None) -> ProviderError:
        return ProviderError(
            429,
            f"{self.kind} rate limit reached: {detail}",
            code="upstream_rate_limited",
            retry_after=retry_after,
            error_type="rate_limit_exceeded",
        )

    def auth_failed(self, detail: str) -> ProviderError:
        return ProviderError(
            502, f"{self.kind} rejected the gateway's API key: {detail}", code="upstream_auth"
        )

    def overloaded(self, detail: str) -> ProviderError:
        return ProviderError(
            503, f"{self.kind} is overloaded: {detail}", code="upstream_overloaded"
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


# Tokens of thought for each reasoning_effort, where a provider takes a budget instead.
THINKING_BUDGETS = {"none": 0, "minimal": 0, "low": 1024, "medium": 4096, "high": 16384}


def thinking_budget(effort: str | None) -> int | None:
    return THINKING_BUDGETS.get(effort) if effort is not None else None


def arguments_object(arguments: str) -> dict[str, Any]:
    """Tool-call arguments as the JSON object Anthropic and Gemini want instead of text."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


# An upstream's wait longer than this is passed on as this (one day).
MAX_RETRY_AFTER = 86400


def retry_after_header(headers: httpx.Headers) -> int | None:
    value = headers.get("retry-after")
    return retry_seconds(value) if value is not None else None


def retry_seconds(text: str) -> int | None:
    """Whole seconds to wait from an upstream's untrusted number of seconds: ignored
    (None) unless finite and not negative, at most ``MAX_RETRY_AFTER``."""
    try:
        seconds = float(text)
    except ValueError:
        return None
    if not math.isfinite(seconds) or seconds < 0:
        return None
    return min(MAX_RETRY_AFTER, math.ceil(seconds))
