"""The seam before the upstream: how a conversation calls a model, and what a call gives
back.

A conversation holds a ``ModelCalls`` and nothing more concrete. Routing
(``inference.routing.upstream``) is the innermost one: it sends each call to a deployment
of the route, with retries, fallbacks and circuit breakers. The response cache, tracing,
the turn's recorder and money's admission wrap it with the same interface, in the order
``inference.calls.factory`` builds them for one conversation of one caller (who its calls
are for, under which limits, in which trace: every layer knows it). A call gives back one
value: a whole reply's ``CallResult``, or a stream whose ``result`` is set once it ended.
Nothing about a call is read afterwards from the object that made it.
"""

from collections.abc import AsyncIterator, Mapping
from contextlib import AbstractAsyncContextManager
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from core.float32 import Vector
from inference.neutral.types import ChatRequest, ChatResponse, StreamEvent, Usage

type CacheResult = Literal["hit", "miss", "bypass"]


@dataclass(frozen=True)
class Answerer:
    """Who answered a model call: a provider (its name in the config) and its model."""

    provider: str
    model: str

    @property
    def label(self) -> str:
        """How responses and logs name it: ``<provider>/<model>``."""
        return f"{self.provider}/{self.model}"


class Marked(Protocol):
    """Where an attempt is traced (``inference.telemetry.spans.Span``): layers above
    routing add what they decided about the call."""

    def set(self, attributes: Mapping[str, Any]) -> None: ...


@dataclass(frozen=True)
class Attempt:
    """One upstream attempt of a call: who it went to, how it ended (``outcome`` "ok" or
    the failure's error code, with the status it maps to), how long it took, what it
    spent (priced; a failed attempt: nothing), and its span."""

    answerer: Answerer
    outcome: str
    status: int
    seconds: float
    usage: Usage
    span: Marked

    def as_log(self) -> dict[str, object]:
        return {
            "provider": self.answerer.provider,
            "model": self.answerer.model,
            "status": self.status,
            "ms": round(self.seconds * 1000, 1),
        }


@dataclass(frozen=True)
class CacheOutcome:
    """What the response cache did with a call: ``hit`` (answered from an entry ``age``
    seconds old, which first cost ``first_paid``), ``miss`` (sent on; ``key`` is the
    entry its reply became, when it was kept) or ``bypass`` (the request kept the cache
    out); ``matched``: the cached question a semantic hit answered with."""

    result: CacheResult
    age: int | None = None
    key: str | None = None
    first_paid: Usage = field(default_factory=Usage)
    matched: str | None = None


@dataclass(frozen=True)
class CallResult:
    """Everything about one model call: the reply (its usage priced), who answered it, its
    upstream attempts (retries and fallbacks included; none for a cache hit), and what the
    cache did, for an agent with a cache."""

    reply: ChatResponse
    answered_by: Answerer | None = None
    attempts: tuple[Attempt, ...] = ()
    cache: CacheOutcome | None = None

    @property
    def usage(self) -> Usage:
        return self.reply.usage


@dataclass(frozen=True)
class Embedded:
    """An embedding call as the gateway accounts for it: the vectors, the prompt tokens
    (the provider's count, else estimated) with their cost, and who answered."""

    vectors: tuple[Vector, ...]  # as ``Embeddings.vectors``
    usage: Usage
    answered_by: Answerer


class CallStream(Protocol):
    """A model call whose reply comes as events, in batches (those of one network read
    of the upstream come together): ``events`` while it is open, then
    ``result`` once they ended. Known from the start: who answers it (``answered_by``), in
    how many attempts (``tries``), and what the cache did; ``so_far`` is what a stream
    cut short has spent (what the provider reported, or the prompt and the text sent so
    far, estimated and priced)."""

    events: AsyncIterator[list[StreamEvent]]
    result: CallResult | None
    answered_by: Answerer | None
    tries: int
    cache: CacheOutcome | None

    def so_far(self) -> Usage: ...


class ModelCalls(Protocol):
    """One conversation's model calls; every reply leaves priced."""

    async def complete(self, request: ChatRequest) -> CallResult: ...

    def stream(
        self, request: ChatRequest, *, held: bool = False
    ) -> AbstractAsyncContextManager[CallStream]:
        """The call, open: its events, then its result. ``held``: the caller collects the
        whole reply before anyone sees it (a failure anywhere in it may still be tried
        again)."""
        ...
