"""The cache on the seam before the upstream (``ModelCalls``): a cached agent's model call
is first looked up (by its key; semantic mode, then by its question's nearest
neighbour in the same context), answered from the entry on a hit without calling the
upstream, and otherwise sent on, its complete reply kept for the next identical call.
A hit spends nothing; what it would have cost is what it saved."""

import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass

from django.utils import timezone

from agents.schema import AgentCacheConfig, AgentConfig, Config
from inference.cache.entries import Entry, storable
from inference.cache.keys import CallKeys, call_keys
from inference.cache.recent import RECENT
from inference.cache.store import Found, NewEntry, find, nearest
from inference.cache.use import Hit, LastCall, TurnCache
from inference.database import in_database
from inference.neutral.calls import CallOutcome, ModelCalls
from inference.neutral.types import (
    ChatRequest,
    ChatResponse,
    Finish,
    StreamAccumulator,
    StreamEvent,
    Usage,
    UsageReport,
    replayed,
)
from inference.providers.base import ProviderError
from inference.routing.deployments import Route
from inference.routing.embedding import embed, embedding_charge
from inference.routing.upstream import RoutingEngine
from inference.telemetry.genai import cache_hit_attributes
from inference.telemetry.spans import NO_SPAN, Span

logger = logging.getLogger("gateway.cache")


@dataclass(frozen=True)
class CachedAgent:
    """An agent whose calls are cached, where they go, and the turn it runs in."""

    agent: AgentConfig
    settings: AgentCacheConfig  # the agent's cache
    route: Route
    turn: TurnCache
    answering: bool  # the conversation whose latest call the response's headers tell


class CachedCalls:
    def __init__(
        self,
        calls: ModelCalls,
        cached: CachedAgent,
        config: Config,
        engine: RoutingEngine,
        span: Span = NO_SPAN,
    ) -> None:
        self.calls = calls
        self.cached = cached
        self.settings = cached.settings
        self.config = config
        self.engine = engine
        self.span = span
        self._hit: Found | None = None  # the latest call's, when it was one

    @property
    def outcome(self) -> CallOutcome:
        if self._hit is not None:
            return CallOutcome(self._hit.entry.answered_by, 0)
        return self.calls.outcome

    def priced(self, usage: Usage) -> Usage:
        return self.calls.priced(usage)

    async def complete(self, request: ChatRequest) -> ChatResponse:
        keys, vector, found = await self._look_up(request)
        if found is not None:
            return self._answer(found)
        reply = await self.calls.complete(request)
        await self._keep(request, keys, vector, reply)
        return reply

    async def stream(
        self, request: ChatRequest, *, held: bool = False
    ) -> AsyncIterator[StreamEvent]:
        keys, vector, found = await self._look_up(request)
        if found is not None:
            reply = self._answer(found)
            for event in replayed(reply):
                yield event
            yield Finish(
                reply.finish_reason,
                reply.response_id,
                reply.response_model,
                reply.by_stop_sequence,
            )
            yield UsageReport(Usage())
            return
        accumulator = StreamAccumulator()
        async for event in self.calls.stream(request, held=held):
            accumulator.add(event)
            yield event
        await self._keep(request, keys, vector, accumulator.response())

    async def _look_up(
        self, request: ChatRequest
    ) -> tuple[CallKeys, tuple[float, ...] | None, Found | None]:
        """The call's keys, its question's embedding (semantic mode, once asked for), and
        the entry that answers it, if the request may read one."""
        self._hit = None
        turn, settings = self.cached.turn, self.settings
        semantic = settings.mode == "semantic"
        agent = self.cached.agent.name
        keys = call_keys(request, agent, self.cached.route, turn.scope(settings), semantic)
        if not turn.control.reads:
            return keys, None, None
        if (held := RECENT.get(keys.key)) is not None:
            return keys, None, held
        now = timezone.now()
        found = await in_database(find, keys.key, now)
        vector = None
        if found is None and semantic and keys.question:
            vector = await self._embedding(keys.question)
            if vector is not None:
                found = await in_database(nearest, keys.context, vector, settings.similarity, now)
        if found is not None:
            RECENT.put(found, agent, turn.user_id, settings.ttl - found.entry.age(now))
        return keys, vector, found

    def _answer(self, found: Found) -> ChatResponse:
        self._hit = found
        entry, now = found.entry, timezone.now()
        self.cached.turn.hits.append(Hit(found.key, entry.reply.usage))
        if self.cached.answering:
            self.cached.turn.last = LastCall("hit", entry.age(now), found.key)
        model = entry.answered_by.model if entry.answered_by else self.cached.agent.model
        with self.span.child(f"chat {model}", "client") as span:
            if span.recording:
                span.set(cache_hit_attributes(model, entry.reply, entry.age(now)))
        return entry.replayed()

    async def _keep(
        self,
        request: ChatRequest,
        keys: CallKeys,
        vector: tuple[float, ...] | None,
        reply: ChatResponse,
    ) -> None:
        turn, settings = self.cached.turn, self.settings
        stored = turn.control.writes and storable(request, reply)
        if self.cached.answering:
            turn.last = LastCall("miss", key=keys.key if stored else None)
        if not stored:
            return
        if settings.mode == "semantic" and vector is None and keys.question:
            vector = await self._embedding(keys.question)
        entry = Entry(reply, self.calls.outcome.answered_by, timezone.now())
        agent = self.cached.agent.name
        turn.stored.append(NewEntry(keys, agent, turn.user_id, entry, settings.ttl, vector))
        RECENT.put(Found(keys.key, entry), agent, turn.user_id, settings.ttl)

    async def _embedding(self, question: str) -> tuple[float, ...] | None:
        """The question's vector from the cache's embedder (charged to the agent, outside
        the user's budget); None when it cannot be had (the call goes on uncached)."""
        embedder = self.config.embedder(self.settings.embedder or "")
        if embedder is None:
            return None
        try:
            embedded = await embed(
                self.config, self.engine, embedder, [question], "query", span=self.span
            )
        except ProviderError as error:
            logger.warning("the cache's embedding failed: %s", error.message)
            return None
        turn = self.cached.turn
        charge = embedding_charge(
            turn.user_id,
            self.cached.agent.name,
            embedder,
            embedded.usage,
            f"cache-{uuid.uuid4().hex[:16]}",
            kind="cache",
        )
        turn.charges.append(charge)
        return embedded.vectors[0]
