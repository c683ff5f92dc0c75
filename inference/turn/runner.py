"""The one owner of a turn once it is prepared: call the model through the tool loop,
record what was spent and said, and start what follows the reply.

Both ways of answering go through here: ``complete`` for a whole answer, ``open_stream``
for events as they come. Provider failures leave as ``ApiError``s; the wire modules
(``inference.dialects``) only shape what the runner hands them.
"""

import asyncio
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable, Coroutine
from dataclasses import replace
from functools import partial
from typing import Any

from django.utils import timezone

from agents.schema import Config
from core.afterresponse import after_response
from core.requestlog import RequestLog
from inference.cache.housekeeping import housekeeping_due, keep_cache
from inference.cache.use import TurnCache
from inference.database import in_database
from inference.engine import Engine
from inference.memory.extraction import TurnToLearn, extract_memories
from inference.money.admission import admit_call, release_quietly
from inference.neutral.errors import ApiError
from inference.neutral.types import (
    ChatResponse,
    Finish,
    StreamEvent,
    TextDelta,
    Usage,
    UsageReport,
)
from inference.providers.base import ProviderError
from inference.routing.upstream import Attempt
from inference.telemetry.genai import (
    agent_attributes,
    experiment_attributes,
    key_attributes,
    usage_attributes,
)
from inference.telemetry.spans import NO_SPAN, Attributes, Span
from inference.tools.bounds import TurnBounds
from inference.tools.exchanges import delete_expired
from inference.tools.executor import CallContext, tool_loop
from inference.tools.loop import ToolLoop
from inference.turn.judges import JudgedEntry, JudgedReply, judge_reply, sampled_judges
from inference.turn.preparation import Turn
from inference.turn.recording import TurnRecord, record_turns
from inference.turn.shadows import run_shadow

logger = logging.getLogger("gateway.inference")


class TurnRunner:
    """``span``: the request's server span; the turn is an ``invoke_agent`` span under
    it, and the judges and shadows after the reply are others."""

    def __init__(
        self, config: Config, engine: Engine, log: RequestLog, span: Span = NO_SPAN
    ) -> None:
        self.config = config
        self.engine = engine
        self.log = log
        self.span = span
        self.invoke = NO_SPAN
        self.loop: ToolLoop | None = None
        self.cache: TurnCache | None = None  # the turn's use of its agent's response cache
        self.bounds = TurnBounds(config.limits)
        self.journal: list[Attempt] = []  # every upstream attempt of the turn (the log's)

    async def complete(self, turn: Turn) -> ChatResponse:
        loop = self._loop(turn)
        with self.invoke:
            try:
                answer = await loop.complete(turn.call.request)
            except ProviderError as error:
                self.invoke.fail(error.code)
                await self._record(turn, loop, self._billed(), None)
                raise self._failure(error) from error
            except BaseException:
                # Another failure, or the client went away (cancelled): bill what was
                # spent, the calls it cut short at their estimate, and settle the budget
                # reservation.
                await asyncio.shield(self._settle_quietly(turn, loop, self._billed()))
                raise
            await self._record(turn, loop, answer.usage, _remembered(answer))
        self._after_reply(turn, loop, answer)
        return self._shown(answer)

    async def open_stream(self, turn: Turn) -> AsyncIterator[StreamEvent]:
        """The answer as events: its text, client tool calls, a ``Finish`` and the total
        ``UsageReport``. The first event is awaited here, so a failure before it is an
        HTTP error rather than a stream that ends in one."""
        events = self._events(turn)
        try:
            first = await anext(events)
        except BaseException:
            await events.aclose()
            raise
        return _starting_with(first, events)

    async def _events(self, turn: Turn) -> AsyncGenerator[StreamEvent]:
        loop = self._loop(turn)
        sent: list[str] = []
        outcome = "cut"  # until it is known otherwise, the client went away
        try:
            async for event in loop.stream(turn.call.request):
                if isinstance(event, TextDelta):
                    sent.append(event.text)
                yield event
            answer = loop.answer
            assert answer is not None
            yield Finish(answer.finish_reason, by_stop_sequence=answer.by_stop_sequence)
            yield UsageReport(self._shown(answer).usage)
            outcome = "done"
        except ProviderError as error:
            outcome = "failed"
            self.invoke.fail(error.code)
            raise self._failure(error) from error
        except Exception as error:
            outcome = "failed"
            self.invoke.fail(type(error).__name__)
            raise
        finally:
            if outcome == "cut":
                self.invoke.fail("cancelled")
            self.invoke.end()
            # A disconnect cancels this generator at its current await; the bill must be
            # written all the same: tokens the provider already spent are billed.
            reply = None
            if outcome == "done" and loop.answer is not None:
                reply = _remembered(loop.answer)
            elif outcome == "cut":
                reply = "".join(sent)
            await asyncio.shield(self._record_quietly(turn, loop, self._billed(), reply))
            if outcome == "done" and loop.answer is not None:
                self._after_reply(turn, loop, loop.answer)

    def _loop(self, turn: Turn) -> ToolLoop:
        call = turn.call
        self.invoke = self.span.child(f"invoke_agent {turn.agent.name}")
        if self.invoke.recording:
            self.invoke.set(_turn_attributes(turn))
        self.bounds = self._bounds(turn)
        if turn.agent.cache is not None:
            self.cache = TurnCache(turn.cache_control, turn.user_id, turn.key_id)
        context = CallContext(
            self.config,
            self.engine,
            turn.user_id,
            self.bounds,
            journal=self.journal,
            span=self.invoke,
            cache=self.cache,
        )
        self.loop = tool_loop(
            context, call.route, call.toolbox, call.request.response_format, agent=turn.agent
        )
        return self.loop

    def _shown(self, answer: ChatResponse) -> ChatResponse:
        """The answer as the client is told it: the tokens of calls the cache answered
        are reported (at no cost) beside what was spent."""
        if self.cache is None or not self.cache.hits:
            return answer
        return replace(answer, usage=answer.usage + self.cache.shown)

    def _billed(self) -> Usage:
        """What the turn is billed: its finished model calls (every level), and the calls
        still under way (a client that went away cut them) at their estimate."""
        return self.bounds.spent + self.bounds.in_flight()

    def upstream_headers(self) -> dict[str, str]:
        """``X-Gateway-Upstream`` and ``X-Gateway-Attempts`` of the turn's final model call."""
        if self.loop is None:
            return {}
        outcome = self.loop.outcome
        headers = {"X-Gateway-Attempts": str(outcome.attempts)}
        if outcome.answered_by is not None:
            headers["X-Gateway-Upstream"] = outcome.answered_by.label
        return headers

    def response_headers(self) -> dict[str, str]:
        """The upstream's headers and, for a cached agent, ``X-Gateway-Cache`` (and
        ``X-Gateway-Cache-Age`` of a hit) of the final model call, or of the first for a
        stream whose headers leave before later calls."""
        headers = self.upstream_headers()
        if self.cache is not None:
            headers["X-Gateway-Cache"] = self.cache.result
            last = self.cache.last
            if last is not None and last.age is not None:
                headers["X-Gateway-Cache-Age"] = str(last.age)
        return headers

    def _bounds(self, turn: Turn) -> TurnBounds:
        """The turn's bounds; with caps on the user or limits on the key, each of its model
        calls after the first is admitted against them with what the turn has spent so
        far."""
        caps, key = turn.setting.options.caps, turn.key
        if not caps and not (key is not None and key.limited):
            return TurnBounds(self.config.limits)

        async def admission(spent: Usage) -> None:
            now = timezone.now()
            await in_database(
                admit_call,
                turn.user_id,
                caps,
                key,
                turn.reservation,
                (spent.total_tokens, spent.cost_micro_usd or 0),
                now,
            )

        return TurnBounds(self.config.limits, admission)

    async def _record(self, turn: Turn, loop: ToolLoop, usage: Usage, reply: str | None) -> None:
        answered_by = loop.outcome.answered_by
        self.log.attempts = [attempt.as_log() for attempt in self.journal]
        if answered_by is not None:
            self.log.provider, self.log.upstream = answered_by.provider, answered_by.label
        self.invoke.set(usage_attributes(usage))
        self.log.tokens = usage.total_tokens
        self.log.cost_usd = usage.cost_usd
        if self.cache is not None:
            self.log.cache = self.cache.result
            self.log.saved_usd = self.cache.saved_micro_usd / 1e6
        self.log.prompt_tokens, self.log.completion_tokens = (
            usage.prompt_tokens,
            usage.completion_tokens,
        )
        client_calls = loop.answer.tool_calls if loop.answer is not None else ()
        exchange = loop.exchange if reply is None and client_calls else None
        record = TurnRecord(
            turn,
            usage,
            reply,
            exchange,
            client_calls,
            timezone.now(),
            answered_by,
            len(self.journal),
            self.cache,
        )
        if record.read_by_later_requests:
            await self.engine.writer.write(record_turns, record)
        else:
            written = self.engine.writer.queue(record_turns, record)
            written.add_done_callback(partial(_log_unrecorded, turn.completion_id))

    async def _record_quietly(
        self, turn: Turn, loop: ToolLoop, usage: Usage, reply: str | None
    ) -> None:
        try:
            await self._record(turn, loop, usage, reply)
        except Exception:
            # The client has its answer already; an error escaping here would hang it.
            logger.exception("could not record turn %s", turn.completion_id)

    async def _settle_quietly(self, turn: Turn, loop: ToolLoop, usage: Usage) -> None:
        """End a turn that has no answer: bill ``usage`` if any, else only release the
        budget reservation."""
        if usage.total_tokens:
            await self._record_quietly(turn, loop, usage, None)
        elif turn.reservation is not None:
            await release_quietly(turn.reservation)

    def _after_reply(self, turn: Turn, loop: ToolLoop, answer: ChatResponse) -> None:
        """Work that must not delay the reply: judges, shadow variants, housekeeping. It
        starts once the response has been sent and runs in the background, owned by the
        engine (finished or cancelled on shutdown)."""
        config, engine, routing = self.config, self.engine, turn.routing
        span = self.span
        work: list[tuple[str, Callable[[], Coroutine[Any, Any, None]]]] = []
        if not answer.tool_calls:
            subject = JudgedReply(
                completion_id=turn.completion_id,
                user_id=turn.user_id,
                agent=turn.agent.name,
                experiment=routing.experiment,
                variant=routing.variant,
                user_text=turn.user_text,
                reply=answer.text,
                started_at=turn.started_at,
                cached=self._judged_entry(turn),
            )
            work += [
                (f"judge {judge.name}", partial(judge_reply, judge, subject, config, engine, span))
                for judge in sampled_judges(config, turn.agent.judges, self.engine.rng)
            ]
        work += [
            (f"shadow {shadow.name}", partial(run_shadow, shadow, turn, config, engine, span))
            for shadow in routing.shadows
        ]
        memory = turn.agent.memory
        if memory is not None and memory.extractor and turn.learns and answer.text:
            exchange = TurnToLearn(
                turn.completion_id,
                turn.user_id,
                turn.agent,
                turn.user_text,
                answer.text,
                turn.started_at,
            )
            work.append(("remember", partial(extract_memories, exchange, config, engine, span)))
        if loop.exchange is not None:
            work.append(("expire tool exchanges", partial(_expire_exchanges)))
        if self.cache is not None and self.cache.stored and housekeeping_due():
            work.append(("keep the cache", partial(keep_cache, config.cache.max_entries)))

        # The request's trace is complete once this work is done too.
        holds = [span.hold() for _ in work]

        def start() -> None:
            for (name, coroutine), release in zip(work, holds, strict=True):
                engine.background.spawn(
                    _releasing(coroutine(), release), name=f"{name} ({turn.completion_id})"
                )

        if work:
            after_response(start)

    def _judged_entry(self, turn: Turn) -> JudgedEntry | None:
        """The cache entry behind the reply, for an agent whose judges may forget it."""
        settings = turn.agent.cache
        last = self.cache.last if self.cache is not None else None
        if settings is None or settings.min_score is None or last is None or last.key is None:
            return None
        return JudgedEntry(last.key, settings.min_score)

    def _failure(self, error: ProviderError) -> ApiError:
        self.log.error = error.code
        return error.as_api_error(self.upstream_headers())


def _turn_attributes(turn: Turn) -> Attributes:
    attributes = agent_attributes(turn.agent.name, turn.requested_model, turn.user_id)
    routing = turn.routing
    if routing.experiment:
        attributes.update(experiment_attributes(routing.experiment, routing.variant))
    if turn.key_id is not None:
        attributes.update(key_attributes(turn.key_id))
    return attributes


async def _releasing(work: Coroutine[Any, Any, None], release: Callable[[], None]) -> None:
    try:
        await work
    finally:
        release()


def _log_unrecorded(completion_id: str, written: asyncio.Future[None]) -> None:
    if not written.cancelled() and (error := written.exception()) is not None:
        logger.error("could not record turn %s", completion_id, exc_info=error)


def _remembered(answer: ChatResponse) -> str | None:
    """What history keeps of an answer: its text, unless the turn ended at client tool
    calls (the follow-up that carries their results keeps the final answer)."""
    return None if answer.tool_calls else answer.text


async def _expire_exchanges() -> None:
    await in_database(delete_expired, timezone.now())


async def _starting_with(
    first: StreamEvent, rest: AsyncIterator[StreamEvent]
) -> AsyncIterator[StreamEvent]:
    try:
        yield first
        async for event in rest:
            yield event
    finally:
        await rest.aclose()  # type: ignore[attr-defined]
