"""One evaluation, run to its end: every case replayed by every candidate, then every
reply (the original's too) judged by every judge.

``evaluations.concurrency`` workers take the cases in turn, and at most that many model
conversations (a candidate's reply with its tool rounds, or a judge's verdict) run at
once across the evaluation, so live traffic keeps the providers' capacity. Before each
conversation, and before each later call inside one, the evaluation's status is read:
once it is not ``running`` (cancelled, from any process) nothing more is started. A
watcher stamps the evaluation's heartbeat and, when another process cancelled it,
cancels the calls under way here.

Every conversation's calls are charged as a ledger row of kind ``evaluation`` to the
agent that made them (a judge's to the agent whose reply it judged: the candidate, or
the source for the original), with no user: no budget, key limit or user's spend counts
them. A call a cancel cuts short is not charged (its usage never came).
"""

import asyncio
import logging
from collections import deque
from collections.abc import Sequence
from typing import Any

from django.utils import timezone

from agents.schema import Config
from core.logformat import log_event
from inference.calls.asking import Asked, Billing
from inference.database import in_database
from inference.engine import Engine
from inference.evaluations import records
from inference.evaluations.cases import RecordedCase
from inference.evaluations.judging import Verdict, verdict_on
from inference.evaluations.replay import replay
from inference.evaluations.spec import Plan
from inference.evaluations.summary import ORIGINAL
from inference.money.caller import Caller
from inference.providers.base import TurnStopped
from inference.telemetry.genai import agent_attributes, usage_attributes
from inference.telemetry.names import agent_trace
from inference.telemetry.spans import Span

logger = logging.getLogger("gateway.evaluations")

HEARTBEAT_SECONDS = 5.0
STOPPED = "the gateway stopped before the evaluation finished"


class EvaluationRun:
    def __init__(
        self,
        evaluation_id: int,
        plan: Plan,
        cases: Sequence[tuple[int, RecordedCase]],
        config: Config,
        engine: Engine,
    ) -> None:
        self.id = evaluation_id
        self.plan = plan
        self.config = config
        self.engine = engine
        self.waiting = deque(cases)
        self.total = len(cases)
        self.workers = min(config.evaluations.concurrency, len(cases))
        self.slots = asyncio.Semaphore(config.evaluations.concurrency)
        self.stopped = False  # no longer running: start nothing more

    async def run(self) -> None:
        """Until every case is done, or the evaluation is cancelled; a stop of the process
        (this task cancelled while the evaluation still runs) marks it failed."""
        watcher = asyncio.create_task(self._watch(asyncio.current_task()))
        try:
            async with asyncio.TaskGroup() as workers:
                for _ in range(self.workers):
                    workers.create_task(self._work())
        except asyncio.CancelledError:
            await asyncio.shield(in_database(records.fail, self.id, STOPPED, timezone.now()))
            raise
        except Exception as error:
            logger.exception("evaluation %s failed", self.id)
            reason = f"internal error: {type(error).__name__}"
            await in_database(records.fail, self.id, reason, timezone.now())
            return
        finally:
            watcher.cancel()
        await in_database(records.finish, self.id, timezone.now())
        log_event(logger, "evaluated", evaluation=self.id, cases=self.total)

    async def _watch(self, run: asyncio.Task[Any] | None) -> None:
        """The heartbeat; a cancel from another process cuts the calls under way here."""
        while True:
            await asyncio.sleep(HEARTBEAT_SECONDS)
            if await in_database(records.beat, self.id, timezone.now()) != "running":
                self.stopped = True
                if run is not None:
                    run.cancel()
                return

    async def _work(self) -> None:
        while self.waiting and not self.stopped:
            case_id, case = self.waiting.popleft()
            await self._case(case_id, case)

    async def _case(self, case_id: int, case: RecordedCase) -> None:
        """The case's replies, their verdicts, and the case stored; nothing stored when
        the evaluation stopped meanwhile."""
        names = self.plan.candidates
        replying = (self._replay(name, case_id, case) for name in names)
        replies = [spoken for spoken in await asyncio.gather(*replying) if spoken is not None]
        if len(replies) < len(names):
            return
        # (whose reply, the agent its judging is charged to, the reply)
        subjects = [
            (name, name, spoken.text)
            for name, spoken in zip(names, replies, strict=True)
            if spoken.text is not None
        ]
        subjects.append((ORIGINAL, self.plan.source_name, case.reply))
        judging = (
            self._judge(judge, case_id, case, agent, reply)
            for _, agent, reply in subjects
            for judge in self.plan.judges
        )
        verdicts = [verdict for verdict in await asyncio.gather(*judging) if verdict is not None]
        if len(verdicts) < len(subjects) * len(self.plan.judges):
            return
        each = len(self.plan.judges)
        judged = {
            whose: verdicts[index * each : (index + 1) * each]
            for index, (whose, _, _) in enumerate(subjects)
        }
        results = {
            name: _replied(spoken, judged.get(name, []))
            for name, spoken in zip(names, replies, strict=True)
        }
        original = _judged(judged[ORIGINAL])
        await in_database(records.case_done, self.id, case_id, results, original, timezone.now())

    async def _replay(self, name: str, case_id: int, case: RecordedCase) -> Asked | None:
        """The candidate's reply (None: the evaluation stopped before it began)."""
        agent = self.config.agent(name)
        assert agent is not None, "the plan was checked against this config"
        async with self.slots:
            if not await self._going_on():
                return None
            with _trace(name, case.user_id) as span:
                try:
                    spoken = await replay(
                        agent,
                        case,
                        self._caller(case, span),
                        self._billing(name, case_id),
                        self.config,
                        self.engine,
                        self._still_running,
                    )
                except Exception as error:
                    logger.exception("evaluation %s: %s failed on case %s", self.id, name, case_id)
                    return Asked.refused(
                        f"internal error: {type(error).__name__}", "internal_error"
                    )
                _traced(span, spoken)
        return spoken

    async def _judge(
        self, name: str, case_id: int, case: RecordedCase, agent: str, reply: str
    ) -> Verdict | None:
        """A judge's verdict on one reply (None: the evaluation stopped before it began)."""
        judge = self.config.judge(name)
        assert judge is not None, "the plan was checked against this config"
        async with self.slots:
            if not await self._going_on():
                return None
            with _trace(name, case.user_id) as span:
                try:
                    verdict = await verdict_on(
                        judge,
                        case.question,
                        reply,
                        self._caller(case, span),
                        self._billing(agent, case_id),
                        self.config,
                        self.engine,
                        self._still_running,
                    )
                except Exception as error:
                    logger.exception(
                        "evaluation %s: judge %s failed on case %s", self.id, name, case_id
                    )
                    failed = Asked.refused(
                        f"internal error: {type(error).__name__}", "internal_error"
                    )
                    return Verdict(name, {}, failed)
                _traced(span, verdict.asked)
        return verdict

    def _caller(self, case: RecordedCase, span: Span) -> Caller:
        """A conversation's: the case's user (the tools act for them); billed to no user."""
        return Caller(case.user_id, purpose="evaluation", span=span)

    def _billing(self, agent: str, case_id: int) -> Billing:
        return Billing(agent, f"evaluation-{self.id}-{case_id}")

    async def _going_on(self) -> bool:
        if not self.stopped:
            self.stopped = await in_database(records.status_of, self.id) != "running"
        return not self.stopped

    async def _still_running(self) -> None:
        """Before each call of a conversation: none once the evaluation is not running."""
        if not await self._going_on():
            raise TurnStopped(409, "the evaluation was cancelled", code="evaluation_cancelled")


def _trace(agent: str, user_id: str) -> Span:
    """A conversation's own trace (exported when an exporter is on; evaluations are not
    ``/v1`` requests, so the Requests pages do not keep them)."""
    return agent_trace(agent, agent_attributes(agent, agent, user_id))


def _traced(span: Span, spoken: Asked) -> None:
    span.set(usage_attributes(spoken.usage))
    if spoken.text is None:
        span.fail("evaluation_call_failed")


def _replied(spoken: Asked, verdicts: Sequence[Verdict]) -> dict[str, Any]:
    return {
        "reply": spoken.text,
        "error": spoken.error,
        "cost_micro_usd": spoken.usage.cost_micro_usd,
        "latency_ms": round(spoken.latency_ms, 1),
        **_judged(verdicts),
    }


def _judged(verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """The scores of a reply by ``judge.criterion``, and why the judges that failed did."""
    scores = {key: score for verdict in verdicts for key, score in verdict.scores.items()}
    errors = {
        verdict.judge: verdict.asked.error for verdict in verdicts if verdict.asked.text is None
    }
    return {"scores": scores, "judge_errors": errors}
