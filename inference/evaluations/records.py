"""Evaluations in the database: what the runner writes as it goes, and what any process
reads back (the admin, the ``evaluate`` command). Synchronous ORM code, run on the
database threads.

A running evaluation's process stamps ``heartbeat_at`` every few seconds
(``inference.evaluations.runner``); one whose stamp is older than ``STALE_AFTER`` lost
its process (a restart, a crash) and is marked ``failed`` by the next read.
"""

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction
from django.db.models import F

from inference.evaluations.cases import RecordedCase
from inference.evaluations.spec import Plan
from inference.evaluations.summary import ORIGINAL, Outcome, SummaryEntry, summarize
from inference.models import Evaluation, EvaluationCase

STALE_AFTER = timedelta(seconds=60)
LOST = (
    "the gateway process running it stopped before it finished (no sign of life for "
    f"{STALE_AFTER.seconds} s): a restart ends the evaluations it was running"
)


@dataclass(frozen=True)
class EvaluationRow:
    id: int
    name: str
    status: str  # running, done, cancelled, failed
    candidates: list[str]
    source: dict[str, str]
    since: datetime | None
    until: datetime | None
    users: list[str]
    limit: int
    judges: list[str]
    total: int
    done: int
    created_at: datetime
    finished_at: datetime | None
    error: str


@dataclass(frozen=True)
class CaseRow:
    id: int
    user: str
    recorded_at: datetime
    question: str
    original: dict[str, Any]  # {reply, cost_micro_usd, latency_ms, scores, judge_errors}
    candidates: dict[str, Any]  # by agent: {reply, error, cost_micro_usd, latency_ms, ...}
    done: bool


def create(plan: Plan, cases: Sequence[RecordedCase], now: datetime) -> tuple[int, list[int]]:
    """The evaluation's row and its cases' (oldest first, so the newest has the highest
    id); its id and the cases' ids in the order of ``cases``."""
    with transaction.atomic():
        evaluation = Evaluation.objects.create(
            name=plan.name,
            status="running",
            candidates=list(plan.candidates),
            source=plan.source,
            since=plan.since,
            until=plan.until,
            users=list(plan.users),
            limit=plan.limit,
            judges=list(plan.judges),
            total=len(cases),
            created_at=now,
            heartbeat_at=now,
        )
        rows = [
            EvaluationCase(
                evaluation=evaluation,
                user_id=case.user_id,
                recorded_at=case.recorded_at,
                question=case.question,
                original={
                    "reply": case.reply,
                    "cost_micro_usd": case.cost_micro_usd,
                    "latency_ms": case.latency_ms,
                },
            )
            for case in reversed(cases)
        ]
        EvaluationCase.objects.bulk_create(rows)
        ids = list(
            EvaluationCase.objects.filter(evaluation=evaluation)
            .order_by("-id")
            .values_list("id", flat=True)
        )
    return evaluation.id, ids


def status_of(evaluation_id: int) -> str:
    found = Evaluation.objects.filter(id=evaluation_id).values_list("status", flat=True)
    return next(iter(found), "")


def beat(evaluation_id: int, now: datetime) -> str:
    """The running evaluation's sign of life; its status (it may have been cancelled)."""
    Evaluation.objects.filter(id=evaluation_id, status="running").update(heartbeat_at=now)
    return status_of(evaluation_id)


def case_done(
    evaluation_id: int,
    case_id: int,
    candidates: Mapping[str, Any],
    original: Mapping[str, Any],
    now: datetime,
) -> None:
    """A case's replies and scores (``original``: what to add to the original's), and the
    evaluation's progress."""
    with transaction.atomic():
        case = EvaluationCase.objects.filter(id=case_id).first()
        if case is None:
            return  # its user was erased meanwhile
        case.candidates = dict(candidates)
        case.original = {**case.original, **original}
        case.done = True
        case.save(update_fields=["candidates", "original", "done"])
        Evaluation.objects.filter(id=evaluation_id).update(done=F("done") + 1, heartbeat_at=now)


def finish(evaluation_id: int, now: datetime) -> None:
    Evaluation.objects.filter(id=evaluation_id, status="running").update(
        status="done", finished_at=now
    )


def fail(evaluation_id: int, reason: str, now: datetime) -> None:
    """A running evaluation that cannot go on (a cancelled one stays cancelled)."""
    Evaluation.objects.filter(id=evaluation_id, status="running").update(
        status="failed", error=reason, finished_at=now
    )


def cancel(evaluation_id: int, now: datetime) -> tuple[EvaluationRow | None, bool]:
    """The evaluation after a cancel (None: there is none), and whether it was running."""
    _expire_stalled(now)
    changed = Evaluation.objects.filter(id=evaluation_id, status="running").update(
        status="cancelled", finished_at=now
    )
    return evaluation(evaluation_id, now), bool(changed)


def evaluation(evaluation_id: int, now: datetime) -> EvaluationRow | None:
    _expire_stalled(now)
    found = Evaluation.objects.filter(id=evaluation_id).first()
    return _row(found) if found is not None else None


def evaluations_before(before_id: int | None, limit: int, now: datetime) -> list[EvaluationRow]:
    """Evaluations, newest first."""
    _expire_stalled(now)
    rows = Evaluation.objects.all()
    if before_id is not None:
        rows = rows.filter(id__lt=before_id)
    return [_row(row) for row in rows.order_by("-id")[:limit]]


def cases_before(evaluation_id: int, before_id: int | None, limit: int) -> list[CaseRow]:
    """An evaluation's cases, newest turn first."""
    rows = EvaluationCase.objects.filter(evaluation_id=evaluation_id)
    if before_id is not None:
        rows = rows.filter(id__lt=before_id)
    return [
        CaseRow(
            id=row.id,
            user=row.user_id,
            recorded_at=row.recorded_at,
            question=row.question,
            original=row.original,
            candidates=row.candidates,
            done=row.done,
        )
        for row in rows.order_by("-id")[:limit]
    ]


def summary_of(row: EvaluationRow) -> list[SummaryEntry]:
    """The figures of the evaluation's cases done so far (``summary``)."""
    cases = EvaluationCase.objects.filter(evaluation_id=row.id, done=True).values_list(
        "original", "candidates"
    )
    outcomes = [
        {
            **{name: _outcome(replied) for name, replied in candidates.items()},
            ORIGINAL: Outcome(
                original.get("scores", {}),
                original.get("cost_micro_usd"),
                original.get("latency_ms"),
            ),
        }
        for original, candidates in cases
    ]
    return summarize(row.candidates, outcomes)


def _outcome(replied: Mapping[str, Any]) -> Outcome:
    return Outcome(
        scores=replied.get("scores", {}),
        cost_micro_usd=replied.get("cost_micro_usd"),
        latency_ms=replied.get("latency_ms"),
        failed=replied.get("reply") is None,
    )


def _expire_stalled(now: datetime) -> None:
    Evaluation.objects.filter(status="running", heartbeat_at__lt=now - STALE_AFTER).update(
        status="failed", error=LOST, finished_at=now
    )


def _row(row: Evaluation) -> EvaluationRow:
    return EvaluationRow(
        id=row.id,
        name=row.name,
        status=row.status,
        candidates=list(row.candidates),
        source=dict(row.source),
        since=row.since,
        until=row.until,
        users=list(row.users),
        limit=row.limit,
        judges=list(row.judges),
        total=row.total,
        done=row.done,
        created_at=row.created_at,
        finished_at=row.finished_at,
        error=row.error,
    )
