"""A conversation's model calls, each sent to a deployment of its route and tried again
where another try can still succeed (docs/resilience.md).

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
priced (``inference.money.prices``).
"""

import asyncio
import random
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import aclosing
from dataclasses import dataclass, field, replace
from typing import Protocol

from agents.schema import Config
from core.metrics import observe_attempt, observe_operation
from inference.money.prices import Price, price_of, priced
from inference.neutral.calls import CallOutcome
from inference.neutral.tokens import estimate_tokens
from inference.neutral.types import (
    ChatRequest,
    ChatResponse,
    Embedded,
    EmbeddingRequest,
    Embeddings,
    Finish,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageReport,
)
from inference.providers.base import Provider, ProviderError
from inference.providers.registry import PROVIDER_KINDS, ProviderClients
from inference.routing.circuits import Circuits
from inference.routing.deployments import Deployment, Route
from inference.telemetry.genai import (
    call_attributes,
    operation_of,
    response_attributes,
    usage_attributes,
)
from inference.telemetry.spans import NO_SPAN, Attributes, Span
from inference.telemetry.tracing import TRACING


class CallBudget(Protocol):
    """The calls a conversation may still make (a turn's bounds, ``inference.tools.bounds``)."""

    async def admit(self) -> None:
        """Before every attempt: raises when the turn may make no more upstream calls."""

    def left(self) -> int:
        """How many more attempts it may make."""
        ...


class _Unbounded:
    """Calls outside a turn (embeddings) have no turn's bounds to stay in."""

    async def admit(self) -> None:
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


@dataclass(frozen=True)
class Attempt:
    deployment: Deployment
    outcome: str  # "ok", or the failure's error code
    status: int  # 200, or the status the failure maps to
    seconds: float
    usage: Usage  # what it spent, priced (a failed attempt: nothing)

    def as_log(self) -> dict[str, object]:
        return {
            "provider": self.deployment.provider,
            "model": self.deployment.model,
            "status": self.status,
            "ms": round(self.seconds * 1000, 1),
        }


@dataclass
class _Seen:
    """What a stream said that its attempt is accounted with: its usage (priced on the
    way), its finish, and its text when content is captured for the span."""

    price: Price | None
    capture: bool
    usage: Usage = field(default_factory=Usage)
    finish: Finish | None = None
    text: list[str] = field(default_factory=list)

    def note(self, event: StreamEvent) -> StreamEvent:
        if isinstance(event, UsageReport):
            self.usage = priced(event.usage, self.price)
            return UsageReport(self.usage)
        if isinstance(event, Finish):
            self.finish = event
        elif self.capture and isinstance(event, TextDelta):
            self.text.append(event.text)
        return event

    def reply(self) -> ChatResponse:
        finish = self.finish
        return ChatResponse(
            text="".join(self.text),
            finish_reason=finish.reason if finish is not None else "stop",
            usage=self.usage,
            response_id=finish.response_id if finish is not None else None,
            response_model=finish.response_model if finish is not None else None,
        )


@dataclass
class _Opened:
    """A stream that reached its first content event (``rest`` None: it is all here)."""

    started: float
    first: list[StreamEvent]
    rest: AsyncIterator[StreamEvent] | None


class Upstream:
    """The model calls of one conversation (a turn's, a subagent's, a shadow's, a judge's).

    ``attempts``: every attempt of the latest call; ``journal``: every attempt, shared by
    all the conversations of a turn (the request log writes it); ``answered_by``: the
    deployment that answered the latest call. Each attempt is a ``chat`` span under
    ``span`` (the conversation's ``invoke_agent``), and its HTTP request carries that
    span's ``traceparent``."""

    def __init__(
        self,
        route: Route,
        config: Config,
        engine: RoutingEngine,
        budget: CallBudget = UNBOUNDED,
        journal: list[Attempt] | None = None,
        span: Span = NO_SPAN,
        marks: Attributes | None = None,
    ) -> None:
        """``marks``: more attributes of every attempt's span (the cache's result)."""
        self.route = route
        self.config = config
        self.providers = engine.providers
        self.circuits = engine.circuits
        self.rng = engine.rng
        self.budget = budget
        self.journal = journal if journal is not None else []
        self.attempts: list[Attempt] = []
        self.tries = 0  # attempts of the latest call, one under way included
        self.answered_by: Deployment | None = None
        self.span = span
        self.marks = marks or {}
        self._started = 0.0  # when the answering attempt began
        self._attempt_span = NO_SPAN  # the answering attempt's

    @property
    def outcome(self) -> CallOutcome:
        """The deployment that answered the latest call, and its attempts."""
        return CallOutcome(self.answered_by, self.tries)

    def priced(self, usage: Usage) -> Usage:
        """``usage`` at the price of the deployment that answered the latest call, else of
        the first."""
        return priced(usage, self._price(self.answered_by or self.route.deployments[0]))

    async def complete(self, request: ChatRequest) -> ChatResponse:
        reply = await self._call(request, _complete)
        deployment = self._answered()
        reply = replace(reply, usage=priced(reply.usage, self._price(deployment)))
        self.circuits.succeeded(deployment)
        span = self._attempt_span
        if span.recording:
            span.set(response_attributes(reply, TRACING.capture_content))
        self._settled(deployment, "ok", 200, self._started, reply.usage, span, reply)
        return reply

    async def embed(self, request: EmbeddingRequest) -> Embedded:
        """The vectors of the request's texts; their tokens are the provider's count, or
        estimated where it gives none (Gemini), and priced."""
        answer = await self._call(request, _embed)
        deployment = self._answered()
        tokens = answer.prompt_tokens
        if tokens is None:
            tokens = sum(estimate_tokens(text) for text in request.texts)
            tokens += sum(len(array) for array in request.token_arrays)
        usage = priced(Usage(prompt_tokens=tokens), self._price(deployment))
        self.circuits.succeeded(deployment)
        span = self._attempt_span
        if span.recording:
            span.set(usage_attributes(usage))
        self._settled(deployment, "ok", 200, self._started, usage, span, operation="embeddings")
        return Embedded(answer.vectors, usage)

    async def stream(
        self, request: ChatRequest, *, held: bool = False
    ) -> AsyncIterator[StreamEvent]:
        """The reply's events. ``held``: the caller collects the whole reply before anyone
        sees it, so a failure anywhere in the stream is tried again."""

        async def open_stream(provider: Provider, request: ChatRequest) -> _Opened:
            return await _open(provider, request, held)

        opened = await self._call(request, open_stream)
        deployment = self._answered()
        price = self._price(deployment)
        span = self._attempt_span
        seen = _Seen(price, span.recording and TRACING.capture_content)
        outcome, status = "cancelled", 499
        try:
            for event in opened.first:
                yield seen.note(event)
            if opened.rest is not None:
                async with aclosing(opened.rest) as rest:  # type: ignore[type-var]
                    async for event in rest:
                        yield seen.note(event)
            outcome, status = "ok", 200
            self.circuits.succeeded(deployment)
        except ProviderError as error:
            outcome, status = error.code, error.status
            if error.retryable:
                self._failed(deployment)
            raise
        finally:
            if outcome == "cancelled":
                self.circuits.abandoned(deployment)
            reply = seen.reply()
            if span.recording:
                span.set(response_attributes(reply, seen.capture))
            self._settled(deployment, outcome, status, opened.started, reply.usage, span, reply)

    def _price(self, deployment: Deployment) -> Price | None:
        return price_of(self.config, deployment.provider, deployment.model)

    def _answered(self) -> Deployment:
        assert self.answered_by is not None
        return self.answered_by

    async def _call[R: (ChatRequest, EmbeddingRequest), T](
        self,
        request: R,
        send: Callable[[Provider, R], Awaitable[T]],
    ) -> T:
        self.attempts, self.tries, self.answered_by = [], 0, None
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
                    return await self._attempt(deployment, request, send)
                except ProviderError as error:
                    if not (error.retryable or error.context_too_long):
                        raise
                    last = error
                if last.context_too_long:
                    break
                policy = self.config.providers[deployment.provider].retries
                # Retries stop while the calls left are needed to try each fallback once.
                room = self.budget.left() > fallbacks_after
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
            raise last
        # Every deployment's circuit is open: try the one that opened longest ago.
        return await self._attempt(self.circuits.longest_open(self.route), request, send)

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

    async def _attempt[R: (ChatRequest, EmbeddingRequest), T](
        self,
        deployment: Deployment,
        request: R,
        send: Callable[[Provider, R], Awaitable[T]],
    ) -> T:
        """One attempt; its success is settled by the caller, once the reply is priced."""
        await self.budget.admit()
        self.tries += 1
        provider = self.providers.provider(deployment.provider, self.config)
        probe = self.circuits.starting(deployment)
        request = replace(request, model=deployment.model)
        operation = operation_of(request)
        span = self.span.child(f"{operation} {deployment.model}", "client")
        if span.recording:
            span.set(
                call_attributes(
                    provider.spec.telemetry_name,
                    provider.base_url,
                    request,
                    self.tries,
                    TRACING.capture_content,
                )
            )
            span.set(self.marks)
        started = time.perf_counter()
        try:
            with span.outgoing():
                result = await send(provider, request)
        except ProviderError as error:
            self._settled(
                deployment, error.code, error.status, started, span=span, operation=operation
            )
            if error.retryable:
                self._failed(deployment)
            else:
                self.circuits.succeeded(deployment)  # it answered: it is up
            raise
        except BaseException:
            if probe:
                self.circuits.abandoned(deployment)
            self._settled(deployment, "cancelled", 499, started, span=span, operation=operation)
            raise
        self.answered_by, self._started, self._attempt_span = deployment, started, span
        return result

    def _failed(self, deployment: Deployment) -> None:
        self.circuits.failed(deployment, self.config.providers[deployment.provider].circuit)

    def _settled(
        self,
        deployment: Deployment,
        outcome: str,
        status: int,
        started: float,
        usage: Usage | None = None,
        span: Span = NO_SPAN,
        reply: ChatResponse | None = None,
        operation: str = "chat",
    ) -> None:
        """Account for an attempt that ended (``outcome`` "ok", or the error code)."""
        seconds = time.perf_counter() - started
        attempt = Attempt(deployment, outcome, status, seconds, usage or Usage())
        self.attempts.append(attempt)
        self.journal.append(attempt)
        if outcome != "ok":
            span.fail(outcome)
        span.end()
        observe_attempt(deployment.provider, deployment.model, outcome)
        kind = self.config.provider_kind(deployment.provider)
        observe_operation(
            operation,
            PROVIDER_KINDS[kind].telemetry_name,
            deployment.model,
            reply.response_model if reply is not None else None,
            seconds,
            None if outcome == "ok" else outcome,
            attempt.usage.prompt_tokens,
            attempt.usage.completion_tokens,
        )


async def _complete(provider: Provider, request: ChatRequest) -> ChatResponse:
    return await provider.complete(request)


async def _embed(provider: Provider, request: EmbeddingRequest) -> Embeddings:
    return await provider.embed(request)


async def _open(provider: Provider, request: ChatRequest, held: bool) -> _Opened:
    """Read ``provider``'s stream up to its first content event (``held``: to its end)."""
    started = time.perf_counter()
    events = aiter(provider.stream(request))
    first: list[StreamEvent] = []
    try:
        async for event in events:
            first.append(event)
            if not held and _is_content(event):
                return _Opened(started, first, events)
    except BaseException:
        await events.aclose()  # type: ignore[attr-defined]
        raise
    return _Opened(started, first, None)


def _is_content(event: StreamEvent) -> bool:
    return isinstance(event, ToolCallDelta) or (isinstance(event, TextDelta) and bool(event.text))
