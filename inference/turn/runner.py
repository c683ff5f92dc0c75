"""The one owner of a turn once it is prepared: call the model through the tool loop,
record what was spent and said, and start what follows the reply.

Both ways of answering go through here: ``complete`` for a whole answer, ``open_stream``
for events as they come; each gives back the answer with the response's headers in one
value. Provider failures leave as ``ApiError``s; the wire modules
(``inference.dialects``) only shape what the runner hands them.
"""

import asyncio
import logging
from collections.abc import AsyncGenerator, Callable, Coroutine
from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from django.utils import timezone

from agents.schema import Config
from core.afterresponse import after_response
from core.logformat import log_failure
from core.requestlog import RequestLog
from inference.background import releasing
from inference.cache.housekeeping import housekeeping_due, keep_cache
from inference.calls.classifiers import GuardrailClassifiers
from inference.calls.conversation import Conversation
from inference.calls.recorder import CallRecorder
from inference.database import in_database
from inference.engine import Engine
from inference.memory.extraction import TurnToLearn, extract_memories
from inference.money.admission import release_quietly
from inference.money.meter import Meter
from inference.neutral.errors import ApiError
from inference.neutral.types import (
    ChatResponse,
    Finish,
    StreamEvent,
    TextDelta,
    UsageReport,
    replayed,
)
from inference.providers.base import ProviderError
from inference.telemetry.genai import (
    agent_attributes,
    experiment_attributes,
    key_attributes,
    usage_attributes,
)
from inference.telemetry.names import agent_span
from inference.telemetry.spans import Attributes
from inference.tools.bounds import CallAllowance
from inference.tools.exchanges import delete_expired
from inference.tools.loop import ToolLoop
from inference.turn.judges import JudgedEntry, JudgedReply, judge_reply, sampled_judges
from inference.turn.preparation import Turn
from inference.turn.recording import TurnRecord, record_turns
from inference.turn.shadows import run_shadow

logger = logging.getLogger("gateway.inference")


@dataclass(frozen=True)
class Replied:
    """A whole answer as the client is told it, and the response's headers."""

    answer: ChatResponse
    headers: dict[str, str]


@dataclass(frozen=True)
class Streamed:
    """The answer as events, in batches: ``first`` (known once the answer began: the
    response's ``headers`` are too), the rest of its text and client tool calls
    (``events``), then, once those ended, its ``ending`` (a ``Finish`` and the total
    ``UsageReport``)."""

    first: list[StreamEvent]
    events: AsyncGenerator[list[StreamEvent]]
    ending: Callable[[], list[StreamEvent]]
    headers: dict[str, str]


class TurnRunner:
    def __init__(self, config: Config, engine: Engine, log: RequestLog) -> None:
        self.config = config
        self.engine = engine
        self.log = log

    async def complete(self, turn: Turn) -> Replied:
        conversation, loop = self._conversation(turn)
        invoke = conversation.caller.span
        with invoke:
            try:
                answer = await loop.complete(turn.call.request)
            except ProviderError as error:
                invoke.fail(error.code)
                await self._record(turn, conversation, loop, None)
                raise self._failure(error, conversation.recorder) from error
            except BaseException:
                # Another failure, or the client went away (cancelled): bill what was
                # spent, the calls it cut short at their estimate, and settle the budget
                # reservations.
                await asyncio.shield(self._settle_quietly(turn, conversation, loop))
                raise
            await self._record(turn, conversation, loop, _remembered(answer))
        shown = self._shown(answer, conversation)
        self._after_reply(turn, conversation, loop, answer)
        return Replied(shown, _headers(turn, conversation.recorder))

    async def open_stream(self, turn: Turn) -> Streamed:
        """The first events are awaited here, so a failure before them is an HTTP error
        rather than a stream that ends in one."""
        conversation, loop = self._conversation(turn)
        events = self._events(turn, conversation, loop)
        try:
            first: list[StreamEvent] = await anext(events, [])
        except BaseException:
            await events.aclose()
            raise

        def ending() -> list[StreamEvent]:
            answer = loop.answer
            assert answer is not None, "a stream that ended has its answer"
            finish = Finish(
                answer.finish_reason,
                response_model=answer.response_model,
                by_stop_sequence=answer.by_stop_sequence,
            )
            return [finish, UsageReport(self._shown(answer, conversation).usage)]

        return Streamed(first, events, ending, _headers(turn, conversation.recorder))

    async def _events(
        self, turn: Turn, conversation: Conversation, loop: ToolLoop
    ) -> AsyncGenerator[list[StreamEvent]]:
        """The answer's text and client tool calls: those of the only round as they
        arrive (read from the call itself, no layer between), or the final answer whole.
        The turn is recorded as they end, whether the client stayed or went away."""
        invoke = conversation.caller.span
        sent: list[str] = []
        outcome = "cut"  # until it is known otherwise, the client went away
        try:
            request = turn.call.request
            if loop.relays:
                async with loop.relayed(request) as call:
                    async for batch in call.events:
                        if shown := loop.shown(batch):
                            sent += [event.text for event in shown if isinstance(event, TextDelta)]
                            yield shown
            else:
                yield replayed(await loop.held(request))
            outcome = "done"
        except ProviderError as error:
            outcome = "failed"
            invoke.fail(error.code)
            raise self._failure(error, conversation.recorder) from error
        except Exception as error:
            outcome = "failed"
            invoke.fail(type(error).__name__)
            raise
        finally:
            if outcome == "cut":
                invoke.fail("cancelled")
            invoke.end()
            # A disconnect cancels this generator at its current await; the bill must be
            # written all the same: tokens the provider already spent are billed.
            reply = None
            if outcome == "done" and loop.answer is not None:
                reply = _remembered(loop.answer)
            elif outcome == "cut":
                reply = "".join(sent)
            await asyncio.shield(self._record_quietly(turn, conversation, loop, reply))
            if outcome == "done" and loop.answer is not None:
                self._after_reply(turn, conversation, loop, loop.answer)

    def _conversation(self, turn: Turn) -> tuple[Conversation, ToolLoop]:
        """The turn's conversation with the agent the client called: its own span, the
        turn's allowance of calls, the meter that admits each and bills them, and the
        recorder of what they did; and its tool loop."""
        call = turn.call
        invoke = agent_span(turn.caller.span, turn.agent.name)
        if invoke.recording:
            invoke.set(_turn_attributes(turn))
        caller = turn.caller.traced(invoke)
        conversation = Conversation(
            self.config,
            self.engine,
            caller,
            CallAllowance(self.config.limits),
            Meter(turn.caller, turn.reservation),
            CallRecorder(),
            control=turn.cache_control,
            classifying=GuardrailClassifiers(self.config, self.engine, caller, turn.agent.name),
        )
        loop = conversation.loop(
            call.route, call.toolbox, call.request.response_format, agent=turn.agent
        )
        return conversation, loop

    def _shown(self, answer: ChatResponse, conversation: Conversation) -> ChatResponse:
        """The answer as the client is told it: what every call of the turn spent, and
        the tokens of the calls the cache answered (at no cost)."""
        usage = conversation.meter.spent
        if conversation.recorder.hits:
            usage += conversation.recorder.shown
        return replace(answer, usage=usage)

    async def _record(
        self, turn: Turn, conversation: Conversation, loop: ToolLoop, reply: str | None
    ) -> None:
        recorder, usage = conversation.recorder, conversation.meter.billed()
        log = self.log
        log.attempts = [attempt.as_log() for attempt in recorder.attempts]
        log.retries = recorder.retries
        if recorder.answerer is not None:
            log.provider, log.upstream = recorder.answerer.provider, recorder.answerer.label
        conversation.caller.span.set(usage_attributes(usage))
        log.tokens = usage.total_tokens
        log.cost_usd = usage.cost_usd
        if turn.agent.cache is not None:
            log.cache = _cache_result(turn, recorder)
            log.saved_usd = recorder.saved_micro_usd / 1e6
            if recorder.cache is not None and recorder.cache.result == "hit":
                log.cache_age = recorder.cache.age
                log.matched_question = recorder.cache.matched or ""
        log.prompt_tokens, log.completion_tokens = usage.prompt_tokens, usage.completion_tokens
        client_calls = loop.answer.tool_calls if loop.answer is not None else ()
        exchange = loop.exchange if reply is None and client_calls else None
        record = TurnRecord(
            turn,
            usage,
            reply,
            exchange,
            client_calls,
            timezone.now(),
            recorder.answerer,
            len(recorder.attempts),
            conversation.meter.reservations,
            len(recorder.hits),
            recorder.shown,
            recorder.saved_micro_usd,
            recorder.kept,
        )
        if record.read_by_later_requests:
            await self.engine.writer.write(record_turns, record)
        else:
            written = self.engine.writer.queue(record_turns, record)
            written.add_done_callback(log_failure(logger, f"turn {turn.completion_id}"))

    async def _record_quietly(
        self, turn: Turn, conversation: Conversation, loop: ToolLoop, reply: str | None
    ) -> None:
        try:
            await self._record(turn, conversation, loop, reply)
        except Exception:
            # The client has its answer already; an error escaping here would hang it.
            logger.exception("could not record turn %s", turn.completion_id)

    async def _settle_quietly(self, turn: Turn, conversation: Conversation, loop: ToolLoop) -> None:
        """End a turn that has no answer: bill what it spent if anything, else only
        release its budget reservations."""
        if conversation.meter.billed().total_tokens:
            await self._record_quietly(turn, conversation, loop, None)
        else:
            await release_quietly(conversation.meter.reservations)

    def _after_reply(
        self, turn: Turn, conversation: Conversation, loop: ToolLoop, answer: ChatResponse
    ) -> None:
        """Work that must not delay the reply: judges, shadow variants, housekeeping. It
        starts once the response has been sent and runs in the background, owned by the
        engine (finished or cancelled on shutdown)."""
        config, engine, routing = self.config, self.engine, turn.routing
        recorder = conversation.recorder
        work: list[tuple[str, Callable[[], Coroutine[Any, Any, None]]]] = []
        if not answer.tool_calls:
            subject = JudgedReply(
                completion_id=turn.completion_id,
                caller=turn.caller,
                agent=turn.agent.name,
                experiment=routing.experiment,
                variant=routing.variant,
                user_text=turn.user_text,
                reply=answer.text,
                cached=_judged_entry(turn, recorder),
            )
            work += [
                (f"judge {judge.name}", partial(judge_reply, judge, subject, config, engine))
                for judge in sampled_judges(config, turn.agent.judges, engine.rng)
            ]
        work += [
            (f"shadow {shadow.name}", partial(run_shadow, shadow, turn, config, engine))
            for shadow in routing.shadows
        ]
        memory = turn.agent.memory
        if memory is not None and memory.extractor and turn.learns and answer.text:
            exchange = TurnToLearn(
                turn.completion_id, turn.caller, turn.agent, turn.user_text, answer.text
            )
            work.append(("remember", partial(extract_memories, exchange, config, engine)))
        if loop.exchange is not None:
            work.append(("expire tool exchanges", partial(_expire_exchanges)))
        if recorder.kept and housekeeping_due():
            work.append(("keep the cache", partial(keep_cache, config.cache.max_entries)))

        # The request's trace is complete once this work is done too.
        holds = [turn.caller.span.hold() for _ in work]

        def start() -> None:
            for (name, coroutine), release in zip(work, holds, strict=True):
                engine.background.spawn(
                    releasing(coroutine(), release), name=f"{name} ({turn.completion_id})"
                )

        if work:
            after_response(start)

    def _failure(self, error: ProviderError, recorder: CallRecorder) -> ApiError:
        self.log.error = error.code
        return error.as_api_error(_upstream_headers(recorder))


def _headers(turn: Turn, recorder: CallRecorder) -> dict[str, str]:
    """``X-Gateway-Upstream`` and ``X-Gateway-Attempts`` of the turn's final model call
    and, for a cached agent, ``X-Gateway-Cache`` (and ``X-Gateway-Cache-Age`` of a hit):
    of the final model call, or of the first for a stream whose headers leave before
    later calls."""
    headers = _upstream_headers(recorder)
    if turn.agent.cache is not None:
        headers["X-Gateway-Cache"] = _cache_result(turn, recorder)
        cache = recorder.cache
        if cache is not None and cache.age is not None:
            headers["X-Gateway-Cache-Age"] = str(cache.age)
    return headers


def _upstream_headers(recorder: CallRecorder) -> dict[str, str]:
    headers = {"X-Gateway-Attempts": str(recorder.tries)}
    if recorder.answerer is not None:
        headers["X-Gateway-Upstream"] = recorder.answerer.label
    if recorder.guardrails.outcomes:
        headers["X-Gateway-Guardrails"] = recorder.guardrails.header
    return headers


def _cache_result(turn: Turn, recorder: CallRecorder) -> str:
    if turn.cache_control.bypassed:
        return "bypass"
    return recorder.cache.result if recorder.cache is not None else "miss"


def _judged_entry(turn: Turn, recorder: CallRecorder) -> JudgedEntry | None:
    """The cache entry behind the reply, for an agent whose judges may forget it."""
    settings, cache = turn.agent.cache, recorder.cache
    if settings is None or settings.min_score is None or cache is None or cache.key is None:
        return None
    return JudgedEntry(cache.key, settings.min_score)


def _turn_attributes(turn: Turn) -> Attributes:
    attributes = agent_attributes(turn.agent.name, turn.requested_model, turn.user_id)
    routing = turn.routing
    if routing.experiment:
        attributes.update(experiment_attributes(routing.experiment, routing.variant))
    if turn.key_id is not None:
        attributes.update(key_attributes(turn.key_id))
    return attributes


def _remembered(answer: ChatResponse) -> str | None:
    """What history keeps of an answer: its text, unless the turn ended at client tool
    calls (the follow-up that carries their results keeps the final answer)."""
    return None if answer.tool_calls else answer.text


async def _expire_exchanges() -> None:
    await in_database(delete_expired, timezone.now())
