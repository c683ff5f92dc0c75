"""A conversation's model calls, each sent to a deployment of its route and tried again
where another try can still succeed (docs/resilience.md): the innermost layer of the
model-call seam (``inference.neutral.calls``).

A call goes to an available deployment (its circuit not open) picked by weight. After a
retryable failure it is tried again, up to ``retries.attempts`` times (of the provider
that failed), preferring a deployment the call has not tried yet: after a wait with
exponential backoff and full jitter, or, when the same deployment is tried again, after
the upstream's ``Retry-After`` when it is no longer than ``retries.max_retry_after`` (a
longer one moves on to the next fallback at once). When the deployments are exhausted
each fallback follows in order, with its own provider's retries; a prompt too long for a
model moves on to the next fallback at once. Other failures end the call.

A stream is tried again only until its first content event went on: the events before
it are held back, so a client never sees two beginnings. Every answer's usage leaves
priced (``inference.money.prices``); every attempt is a span under the conversation's
(``span``), and its HTTP request carries that span's ``traceparent``.
"""

import asyncio
import random
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field, replace
from typing import Protocol

from agents.schema import Config
from core.metrics import observe_attempt, observe_operation
from core.providerkinds import PROVIDER_KINDS
from inference.money.prices import Price, price_of, priced
from inference.neutral.calls import (
    Answerer,
    Attempt,
    CacheOutcome,
    CallResult,
    CallStream,
    Embedded,
)
from inference.neutral.tokens import estimate_tokens
from inference.neutral.types import (
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    Embeddings,
    StreamAccumulator,
    StreamEvent,
    Usage,
    UsageReport,
)
from inference.providers.base import Provider, ProviderError
from inference.providers.registry import ProviderClients
from inference.providers.streaming import ProviderStream
from inference.routing.circuits import Circuits
from inference.routing.deployments import Deployment, Route
from inference.telemetry.genai import call_attributes, response_attributes, usage_attributes
from inference.telemetry.names import model_span
from inference.telemetry.spans import NO_SPAN, Span
from inference.telemetry.tracing import TRACING


class Allowance(Protocol):
    """The upstream calls a conversation may still make (a turn's,
    ``inference.tools.bounds.CallAllowance``)."""

    async def take(self) -> None:
        """Before every attempt: raises when the turn may make no more upstream calls."""

    def left(self) -> int:
        """How many more attempts it may make."""
        ...


class _Unbounded:
    """Calls outside a turn (embeddings, token counts) have no turn's bounds to stay in."""

    async def take(self) -> None:
        return None

    def left(self) -> int:
        return sys.maxsize


UNBOUNDED = _Unbounded()


class RoutingEngine(Protocol):
    """What routing borrows from the process's engine (``inference.engine``)."""

    @property
    def providers(self) -> ProviderClients: ...
    @property
    def circuits(self) -> Circuits: ...
    @property
    def rng(self) -> random.Random: ...


@dataclass
class _Call:
    """One call under way: its attempts so far, and the one that answered."""

    attempts: list[Attempt] = field(default_factory=list)
    tries: int = 0  # attempts begun, one under way included
    answered_by: Deployment | None = None
    started: float = 0.0  # when the answering attempt began
    span: Span = NO_SPAN  # the answering attempt's


class _Noted:
    """What a stream's events said so far, their usage priced: routing sees each batch
    before anyone else (``ProviderStream``'s ``noted``)."""

    def __init__(self, price: Price | None) -> None:
        self.price = price
        self.seen = StreamAccumulator()

    def __call__(self, batch: list[StreamEvent]) -> None:
        seen = self.seen
        for index, event in enumerate(batch):
            if isinstance(event, UsageReport):
                event = batch[index] = UsageReport(priced(event.usage, self.price))
            seen.add(event)


class _OpenStream:
    """A stream being relayed: its events (the provider's, noted on the way), and the
    result once they ended."""

    def __init__(
        self, opened: ProviderStream, noted: _Noted, call: _Call, request: ChatRequest
    ) -> None:
        self.opened = opened
        self.answered_by: Answerer | None = call.answered_by
        self.tries = call.tries
        self.price = noted.price
        self.request = request
        self.seen = noted.seen
        self.result: CallResult | None = None
        self.cache: CacheOutcome | None = None  # what the cache did, when it asked
        self.events = opened.events()

    @property
    def ended(self) -> bool:
        return self.opened.done

    def so_far(self) -> Usage:
        """What the provider reported, or, cut before its usage came, the prompt and the
        text sent so far (estimated, priced)."""
        if self.seen.usage.total_tokens:
            return self.seen.usage
        request = self.request
        prompt = request.system + "".join(message.content for message in request.messages)
        sent = "".join(self.seen.text)
        return priced(Usage(estimate_tokens(prompt), estimate_tokens(sent)), self.price)


class RoutedCalls:
    """The model calls of one conversation (a turn's, a subagent's, a shadow's, a judge's),
    each attempt a ``chat`` span under ``span`` (the conversation's ``invoke_agent``) and
    one of the turn's ``allowance``."""

    def __init__(
        self,
        route: Route,
        config: Config,
        engine: RoutingEngine,
        allowance: Allowance = UNBOUNDED,
        span: Span = NO_SPAN,
    ) -> None:
        self.route = route
        self.config = config
        self.providers = engine.providers
        self.circuits = engine.circuits
        self.rng = engine.rng
        self.allowance = allowance
        self.span = span

    async def complete(self, request: ChatRequest) -> CallResult:
        call = _Call()
        reply = await self._call(call, request, _complete)
        deployment = _answered(call)
        reply = replace(reply, usage=priced(reply.usage, self._price(deployment)))
        self.circuits.succeeded(deployment)
        if call.span.recording:
            call.span.set(response_attributes(reply, TRACING.capture_content))
        self._settled(
            call, deployment, "ok", 200, call.started, reply.usage, call.span,
            response_model=reply.response_model,
        )  # fmt: skip
        return CallResult(reply, deployment, tuple(call.attempts))

    @asynccontextmanager
    async def stream(
        self, request: ChatRequest, *, held: bool = False
    ) -> AsyncIterator[CallStream]:
        """The reply's events. ``held``: the caller collects the whole reply before anyone
        sees it, so a failure anywhere in the stream is tried again."""

        async def open_stream(
            provider: Provider, request: ChatRequest
        ) -> tuple[ProviderStream, _Noted]:
            noted = _Noted(price_of(self.config, provider.name, request.model))
            return await provider.open_stream(request, noted, held), noted

        call = _Call()
        opened, noted = await self._call(call, request, open_stream)
        deployment = _answered(call)
        stream = _OpenStream(opened, noted, call, request)
        outcome, status = "cancelled", 499
        failure: ProviderError | None = None
        try:
            yield stream
            if stream.ended:
                outcome, status = "ok", 200
                self.circuits.succeeded(deployment)
        except ProviderError as error:
            failure, outcome, status = error, error.code, error.status
            if error.retryable:
                self._failed(deployment)
            raise
        finally:
            if outcome == "cancelled":
                self.circuits.abandoned(deployment)
            await stream.events.aclose()  # type: ignore[attr-defined]
            await opened.aclose()  # its events may never have been read
            reply = stream.seen.response()
            if call.span.recording:
                call.span.set(response_attributes(reply, TRACING.capture_content))
            self._settled(
                call, deployment, outcome, status, call.started, reply.usage, call.span,
                response_model=reply.response_model,
            )  # fmt: skip
            if failure is not None:
                failure.attempts = tuple(call.attempts)
            elif outcome == "ok":
                stream.result = CallResult(reply, deployment, tuple(call.attempts))

    async def embed(self, request: EmbeddingRequest) -> Embedded:
        """The vectors of the request's texts; their tokens are the provider's count, or
        estimated where it gives none (Gemini), and priced."""
        call = _Call()
        answer = await self._call(call, request, _embed)
        deployment = _answered(call)
        tokens = answer.prompt_tokens
        if tokens is None:
            tokens = sum(estimate_tokens(text) for text in request.texts)
            tokens += sum(len(array) for array in request.token_arrays)
        usage = priced(Usage(prompt_tokens=tokens), self._price(deployment))
        self.circuits.succeeded(deployment)
        if call.span.recording:
            call.span.set(usage_attributes(usage))
        self._settled(call, deployment, "ok", 200, call.started, usage, call.span, "embeddings")
        return Embedded(answer.vectors, usage, deployment)

    async def count_tokens(self, request: ChatRequest) -> int | None:
        """The provider's own count of the request's input tokens (None: it has none)."""

        async def count(provider: Provider, request: ChatRequest) -> int | None:
            return await provider.count_tokens(provider.readable(request))

        call = _Call()
        counted = await self._call(call, request, count, "count_tokens")
        deployment = _answered(call)
        self.circuits.succeeded(deployment)
        self._settled(call, deployment, "ok", 200, call.started, Usage(), call.span, "count_tokens")
        return counted

    def _price(self, deployment: Deployment) -> Price | None:
        return price_of(self.config, deployment.provider, deployment.model)

    async def _call[R: (ChatRequest, EmbeddingRequest), T](
        self,
        call: _Call,
        request: R,
        send: Callable[[Provider, R], Awaitable[T]],
        operation: str | None = None,
    ) -> T:
        last: ProviderError | None = None
        stages = self.route.stages
        for number, stage in enumerate(stages):
            fallbacks_after = len(stages) - number - 1
            tried: set[Deployment] = set()
            retries = 0
            deployment = self._pick(stage, tried)
            while deployment is not None:
                tried.add(deployment)
                try:
                    return await self._attempt_at(call, deployment, request, send, operation)
                except ProviderError as error:
                    if not (error.retryable or error.context_too_long):
                        error.attempts = tuple(call.attempts)
                        raise
                    last = error
                if last.context_too_long:
                    break
                policy = self.config.providers[deployment.provider].retries
                # Retries stop while the calls left are needed to try each fallback once.
                room = self.allowance.left() > fallbacks_after
                following = self._pick(stage, tried) if room and retries < policy.attempts else None
                if following is None:
                    break
                wait = self.rng.uniform(0, min(policy.max_backoff, policy.backoff * 2**retries))
                if following == deployment and last.retry_after is not None:
                    if last.retry_after > policy.max_retry_after:
                        break
                    wait = last.retry_after
                retries += 1
                await asyncio.sleep(wait)
                deployment = following
        if last is not None:
            last.attempts = tuple(call.attempts)
            raise last
        # Every deployment's circuit is open: try the one that opened longest ago.
        longest = self.circuits.longest_open(self.route)
        return await self._attempt_at(call, longest, request, send, operation)

    def _pick(self, stage: tuple[Deployment, ...], tried: set[Deployment]) -> Deployment | None:
        """An available deployment of ``stage`` by weight, one not tried yet if any is."""
        if len(stage) == 1:
            only = stage[0]
            return only if self._available(only) else None
        available = [deployment for deployment in stage if self._available(deployment)]
        fresh = [deployment for deployment in available if deployment not in tried] or available
        if len(fresh) <= 1:
            return fresh[0] if fresh else None
        return self.rng.choices(fresh, weights=[deployment.weight for deployment in fresh])[0]

    def _available(self, deployment: Deployment) -> bool:
        return self.circuits.available(
            deployment, self.config.providers[deployment.provider].circuit
        )

    async def _attempt_at[R: (ChatRequest, EmbeddingRequest), T](
        self,
        call: _Call,
        deployment: Deployment,
        request: R,
        send: Callable[[Provider, R], Awaitable[T]],
        operation: str | None,
    ) -> T:
        """One attempt; its success is settled by the caller, once the reply is priced."""
        await self.allowance.take()
        call.tries += 1
        provider = self.providers.provider(deployment.provider, self.config)
        probe = self.circuits.starting(deployment)
        request = replace(request, model=deployment.model)
        operation = operation or ("chat" if isinstance(request, ChatRequest) else "embeddings")
        span = model_span(self.span, operation, deployment.model)
        if span.recording:
            span.set(
                call_attributes(
                    provider.spec.telemetry_name,
                    provider.base_url,
                    request,
                    call.tries,
                    TRACING.capture_content,
                )
            )
        started = time.perf_counter()
        try:
            with span.outgoing():
                result = await send(provider, request)
        except ProviderError as error:
            self._settled(
                call, deployment, error.code, error.status, started, span=span, operation=operation
            )
            if error.retryable:
                self._failed(deployment)
            else:
                self.circuits.succeeded(deployment)  # it answered: it is up
            raise
        except BaseException:
            if probe:
                self.circuits.abandoned(deployment)
            self._settled(
                call, deployment, "cancelled", 499, started, span=span, operation=operation
            )
            raise
        call.answered_by, call.started, call.span = deployment, started, span
        return result

    def _failed(self, deployment: Deployment) -> None:
        self.circuits.failed(deployment, self.config.providers[deployment.provider].circuit)

    def _attempt(
        self,
        deployment: Deployment,
        outcome: str,
        status: int,
        started: float,
        usage: Usage,
        span: Span,
    ) -> Attempt:
        return Attempt(deployment, outcome, status, time.perf_counter() - started, usage, span)

    def _settled(
        self,
        call: _Call,
        deployment: Deployment,
        outcome: str,
        status: int,
        started: float,
        usage: Usage | None = None,
        span: Span = NO_SPAN,
        operation: str = "chat",
        response_model: str | None = None,
    ) -> None:
        """Account for an attempt that ended (``outcome`` "ok", or the error code)."""
        attempt = self._attempt(deployment, outcome, status, started, usage or Usage(), span)
        call.attempts.append(attempt)
        if outcome != "ok":
            span.fail(outcome)
        span.end()
        observe_attempt(deployment.provider, deployment.model, outcome)
        kind = self.config.provider_kind(deployment.provider)
        observe_operation(
            operation,
            PROVIDER_KINDS[kind].telemetry_name,
            deployment.model,
            response_model,
            attempt.seconds,
            None if outcome == "ok" else outcome,
            attempt.usage.prompt_tokens,
            attempt.usage.completion_tokens,
        )


def _answered(call: _Call) -> Deployment:
    assert call.answered_by is not None
    return call.answered_by


async def _complete(provider: Provider, request: ChatRequest) -> ChatResponse:
    return await provider.complete(request)


async def _embed(provider: Provider, request: EmbeddingRequest) -> Embeddings:
    return await provider.embed(request)
