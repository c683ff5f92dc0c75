"""Evaluations running in the background of this process: started by the admin's
``POST /admin/evaluations``, they outlive the request as services of the engine (so a
stop of the process cancels them, and they are marked failed), and a ``DELETE`` cancels
them here at once (``records.cancel`` tells the other processes' through the database).
"""

import asyncio
from dataclasses import dataclass
from functools import partial

from django.utils import timezone

from agents.schema import Config
from inference.database import in_database
from inference.engine import Engine
from inference.evaluations import records
from inference.evaluations.cases import RecordedCase, recorded_cases
from inference.evaluations.runner import EvaluationRun
from inference.evaluations.spec import Plan

# How long a cancel waits for this process's calls of the evaluation to unwind.
UNWIND_SECONDS = 10.0

_running: dict[int, asyncio.Task[None]] = {}


@dataclass(frozen=True)
class Prepared:
    """An evaluation's row, created with its cases (ids in the order of ``cases``)."""

    id: int
    cases: list[tuple[int, RecordedCase]]

    @property
    def total(self) -> int:
        return len(self.cases)


async def prepare(plan: Plan, config: Config) -> Prepared:
    """The evaluation's cases read and its rows written: it is ``running`` from now."""
    cases = await in_database(recorded_cases, plan, config.history)
    evaluation_id, ids = await in_database(records.create, plan, cases, timezone.now())
    return Prepared(evaluation_id, list(zip(ids, cases, strict=True)))


async def start(plan: Plan, config: Config, engine: Engine) -> records.EvaluationRow:
    """Prepare the evaluation and run it in the background of this process; its row as
    it starts."""
    prepared = await prepare(plan, config)
    row = await in_database(records.evaluation, prepared.id, timezone.now())
    assert row is not None, "it was just written"
    evaluation = EvaluationRun(prepared.id, plan, prepared.cases, config, engine)
    task = asyncio.create_task(evaluation.run(), name=f"evaluation {prepared.id}")
    engine.services.add(task)
    _running[prepared.id] = task
    task.add_done_callback(partial(_ended, engine, prepared.id))
    return row


async def cancel(evaluation_id: int) -> tuple[records.EvaluationRow | None, bool]:
    """Cancel the evaluation (None: there is none; False: it was not running). Its calls
    under way in this process are cancelled, and unwound before this returns."""
    row, changed = await in_database(records.cancel, evaluation_id, timezone.now())
    task = _running.get(evaluation_id)
    if changed and task is not None:
        task.cancel()
        await asyncio.wait({task}, timeout=UNWIND_SECONDS)
    return row, changed


def _ended(engine: Engine, evaluation_id: int, task: asyncio.Task[None]) -> None:
    engine.services.discard(task)
    _running.pop(evaluation_id, None)
