"""The cache on the model-call seam (``inference.neutral.calls``): a cached agent's call
is first looked up (by its key; semantic mode, then by its question's nearest
neighbour in the same context), answered from the entry on a hit without calling the
upstream, and otherwise sent on, its complete reply kept for the next identical call.
A hit spends nothing; what it would have cost is what it saved. Every call's result
says what the cache did (``CacheOutcome``).

What the cache writes (the replies it keeps, the hits it served, the embeddings of its
semantic lookups, charged to the agent) goes to the engine's record writer as it
happens; a turn that waits for its own records (``inference.turn.recording``) waits for
these too, as they were queued before them.
"""

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator, Callable, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any, Protocol

from django.utils import timezone

from agents.schema import AgentCacheConfig, AgentConfig, Config
from core.float32 import Vector
from core.logformat import log_failure
from core.metrics import observe_cache_gated
from inference.cache.entries import Entry, storable
from inference.cache.gate import disagreement
from inference.cache.keys import CallKeys, call_keys
from inference.cache.recent import RECENT
from inference.cache.store import Found, NewEntry, find, nearest, write
from inference.cache.use import CacheControl, scope_of
from inference.database import in_database
from inference.erasures import erasures_of
from inference.money.caller import Caller
from inference.money.settlement import charge, settle
from inference.neutral.calls import CacheOutcome, CallResult, CallStream, ModelCalls
from inference.neutral.types import (
    ChatRequest,
    Finish,
    StreamEvent,
    Usage,
    UsageReport,
    replayed,
)
from inference.providers.base import ProviderError
from inference.routing.deployments import Route
from inference.routing.embedding import embed
from inference.routing.upstream import RoutingEngine

logger = logging.getLogger("gateway.cache")


class Writer(Protocol):
    """The engine's record writer (``inference.ledger.writer``)."""

    def queue(
        self, write_group: Callable[[list[Any]], None], record: Any
    ) -> asyncio.Future[None]: ...

    def defer(self, write_group: Callable[[list[Any]], None], record: Any) -> None: ...


class CacheEngine(RoutingEngine, Protocol):
    @property
    def writer(self) -> Writer: ...


@dataclass(frozen=True)
class Kept:
    """What the cache writes of one call: a reply to keep, or the key of a hit (its use
    noted); ``started_at``: when the work began (a user erased since keeps nothing)."""

    user_id: str
    started_at: datetime
    entry: NewEntry | None = None
    hit: str | None = None


def keep(records: Sequence[Kept]) -> None:
    """Write the cache's records (the writer holds the transaction)."""
    erasures = erasures_of({record.user_id for record in records if record.entry})
    stored = [
        record.entry
        for record in records
        if record.entry is not None and not erasures.since(record.user_id, record.started_at)
    ]
    write(stored, [record.hit for record in records if record.hit], timezone.now())


class _Replayed:
    """A hit as a stream: the stored reply's events, its result known from the start."""

    def __init__(self, result: CallResult) -> None:
        self.result: CallResult | None = result
        self.answered_by = result.answered_by
        self.tries = 0
        self.cache = result.cache
        self.events = self._events(result)

    async def _events(self, result: CallResult) -> AsyncIterator[list[StreamEvent]]:
        reply = result.reply
        yield [
            *replayed(reply),
            Finish(
                reply.finish_reason, reply.response_id, reply.response_model, reply.by_stop_sequence
            ),
            UsageReport(Usage()),
        ]

    def so_far(self) -> Usage:
        return Usage()


class CachedCalls:
    """The calls of a conversation of ``agent`` (whose ``cache`` is set) for ``caller``,
    as ``control`` lets them use the cache."""

    def __init__(
        self,
        calls: ModelCalls,
        agent: AgentConfig,
        route: Route,
        caller: Caller,
        control: CacheControl,
        config: Config,
        engine: CacheEngine,
    ) -> None:
        assert agent.cache is not None
        self.calls = calls
        self.agent = agent
        self.settings: AgentCacheConfig = agent.cache
        self.route = route
        self.caller = caller
        self.control = control
        self.config = config
        self.engine = engine

    async def complete(self, request: ChatRequest) -> CallResult:
        if self.control.bypassed:
            result = await self.calls.complete(request)
            return replace(result, cache=CacheOutcome("bypass"))
        keys, vector, found = await self._look_up(request)
        if found is not None:
            return self._hit(found)
        result = await self.calls.complete(request)
        return await self._kept(request, keys, vector, result)

    @asynccontextmanager
    async def stream(
        self, request: ChatRequest, *, held: bool = False
    ) -> AsyncIterator[CallStream]:
        if self.control.bypassed:
            outcome = CacheOutcome("bypass")
            async with self.calls.stream(request, held=held) as opened:
                opened.cache = outcome
                yield opened
            if opened.result is not None:
                opened.result = replace(opened.result, cache=outcome)
            return
        keys, vector, found = await self._look_up(request)
        if found is not None:
            yield _Replayed(self._hit(found))
            return
        async with self.calls.stream(request, held=held) as opened:
            opened.cache = CacheOutcome("miss")
            yield opened
        if opened.result is not None:
            opened.result = await self._kept(request, keys, vector, opened.result)

    async def _look_up(self, request: ChatRequest) -> tuple[CallKeys, Vector | None, Found | None]:
        """The call's keys, its question's embedding (semantic mode, once asked for), and
        the entry that answers it, if the request may read one (semantic mode: the most
        similar question's, when the gate lets it through)."""
        settings = self.settings
        semantic = settings.mode == "semantic"
        agent = self.agent.name
        keys = call_keys(request, agent, self.route, scope_of(settings, self.caller), semantic)
        if not self.control.reads:
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
                found = self._gated(found, keys.question)
        if found is not None:  # held under its own key: an exact hit from there on
            exact = replace(found, similar=False)
            RECENT.put(exact, agent, self.caller.user_id, settings.ttl - found.entry.age(now))
        return keys, vector, found

    def _gated(self, found: Found | None, question: str) -> Found | None:
        """The similar question's entry, unless the gate stops it (it then counts as a
        miss: no other candidate is tried). An entry kept without its question cannot be
        compared: the strict gate stops it."""
        if found is None or self.settings.gate == "off":
            return found
        cached = found.entry.question
        if cached and disagreement(cached, question) is None:
            return found
        observe_cache_gated(self.agent.name)
        return None

    def _hit(self, found: Found) -> CallResult:
        entry = found.entry
        self._write(Kept(self.caller.user_id, self.caller.started_at, hit=found.key))
        age, paid = entry.age(timezone.now()), entry.reply.usage
        matched = (entry.question or None) if found.similar else None
        outcome = CacheOutcome("hit", age, found.key, paid, matched)
        return CallResult(entry.replayed(), entry.answered_by, (), outcome)

    async def _kept(
        self,
        request: ChatRequest,
        keys: CallKeys,
        vector: Vector | None,
        result: CallResult,
    ) -> CallResult:
        """The miss's result, its reply kept when it may be."""
        if not (self.control.writes and storable(request, result.reply)):
            return replace(result, cache=CacheOutcome("miss"))
        settings = self.settings
        if settings.mode == "semantic" and vector is None and keys.question:
            vector = await self._embedding(keys.question)
        entry = Entry(result.reply, result.answered_by, timezone.now(), keys.question)
        agent, user_id = self.agent.name, self.caller.user_id
        kept = NewEntry(keys, agent, user_id, entry, settings.ttl, vector)
        self._write(Kept(user_id, self.caller.started_at, entry=kept))
        RECENT.put(Found(keys.key, entry), agent, user_id, settings.ttl)
        return replace(result, cache=CacheOutcome("miss", key=keys.key))

    async def _embedding(self, question: str) -> Vector | None:
        """The question's vector from the cache's embedder (charged to the agent, outside
        the user's budget); None when it cannot be had (the call goes on uncached)."""
        embedder = self.config.embedder(self.settings.embedder or "")
        if embedder is None:
            return None
        caller = self.caller.to("cache")
        try:
            embedded = await embed(
                self.config, self.engine, embedder, [question], "query", span=caller.span
            )
        except ProviderError as error:
            logger.warning("the cache's embedding failed: %s", error.message)
            return None
        cost = charge(
            caller,
            embedded.usage,
            agent=self.agent.name,
            call_id=f"cache-{uuid.uuid4().hex[:16]}",
            answered_by=embedded.answered_by,
        )
        self.engine.writer.queue(settle, cost).add_done_callback(
            log_failure(logger, "a cache charge")
        )
        return embedded.vectors[0]

    def _write(self, kept: Kept) -> None:
        self.engine.writer.queue(keep, kept).add_done_callback(log_failure(logger, "a cache entry"))
