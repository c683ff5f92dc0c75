"""Evaluations (docs/evaluations.md): start one on recorded traffic, follow its progress,
read its summary and cases, cancel it. It runs in the background of the process that
received the ``POST``; its progress and results are in the database, so any process
answers the reads."""

from dataclasses import asdict
from datetime import datetime
from typing import Any, cast

from django.urls import reverse
from django.utils import timezone
from ninja import Router
from ninja.responses import Status
from pydantic import BaseModel, SkipValidation

from adminui.context import AdminRequest
from adminui.records.charts import BarChart, score_bars
from adminui.rendering.bodies import form_data
from adminui.rendering.errors import AdminError, loaded_config
from adminui.rendering.negotiation import is_form, is_html, respond, written
from adminui.rendering.paging import page
from adminui.schemas import errors
from inference.evaluations import records
from inference.evaluations.spec import EvaluationIn, InvalidEvaluation, plan_of
from inference.evaluations.summary import SummaryEntry

router = Router(tags=["evaluations"])


class Progress(BaseModel):
    done: int
    total: int


class SourceOut(BaseModel):
    """As asked: an agent or an experiment (the other is null) and the window."""

    agent: str | None
    experiment: str | None
    since: datetime | None
    until: datetime | None
    users: list[str]
    limit: int


class EvaluationItem(BaseModel):
    id: int
    name: str
    status: str  # running, done, cancelled, failed
    progress: Progress
    candidates: list[str]
    source: SourceOut
    judges: list[str]
    created_at: datetime
    finished_at: datetime | None
    error: str | None


class ScoreOut(BaseModel):
    mean: float
    ci: tuple[float, float]  # 95 % bootstrap interval of the mean
    n: int  # the cases scored on it


class SummaryOut(BaseModel):
    agent: str  # a candidate, or "original"
    scores: dict[str, ScoreOut]  # by "judge.criterion"
    mean_cost_usd: float | None
    mean_latency_ms: float | None
    win: int | None
    tie: int | None
    loss: int | None
    failed: int


class EvaluationOut(EvaluationItem):
    summary: list[SummaryOut]


class EvaluationPage(BaseModel):
    data: list[EvaluationItem]
    next: str | None


class EvaluationStarted(BaseModel):
    id: int
    status: str
    total: int


class ReplyOut(BaseModel):
    reply: str | None  # None: not replied yet, or it failed (see error)
    error: str | None
    cost_usd: float | None
    latency_ms: float | None
    scores: dict[str, int]
    judge_errors: dict[str, str]


class CaseOut(BaseModel):
    id: int
    user: str
    recorded_at: datetime
    question: str
    done: bool
    original: ReplyOut
    candidates: dict[str, ReplyOut]


class CasePage(BaseModel):
    data: list[CaseOut]
    next: str | None


@router.get(
    "/evaluations",
    response={200: EvaluationPage, **errors()},
    operation_id="list_evaluations",
    url_name="evaluations",
    summary="Evaluations, newest first",
)
def list_evaluations(request: AdminRequest, cursor: str | None = None) -> Any:
    now = timezone.now()
    rows, following = page(
        lambda before, limit: records.evaluations_before(before, limit, now), cursor
    )
    data = {"data": [_item(row) for row in rows], "next": following}
    return respond(request, data, "adminui/evaluations.html", **_form_choices(request))


@router.post(
    "/evaluations",
    response={202: EvaluationStarted, **errors(422, 503)},
    operation_id="start_evaluation",
    url_name="evaluations_start",
    summary="Replay recorded turns of an agent or experiment through candidate agents, "
    "judged; it runs in the background",
)
async def start_evaluation(request: AdminRequest, payload: SkipValidation[EvaluationIn]) -> Any:
    config = loaded_config(request)
    body = _form_fields(request) if is_form(request) else cast(dict[str, Any], payload)
    try:
        plan = plan_of(body, config)
    except InvalidEvaluation as error:
        message = "The evaluation cannot start: " + "; ".join(error.problems)
        raise AdminError(422, message, "invalid", error.problems) from error
    row = await request.runtime.start_evaluation(plan, config)
    if is_html(request):
        return written(request, reverse("admin:evaluation", args=[row.id]))
    return Status(202, {"id": row.id, "status": row.status, "total": row.total})


@router.get(
    "/evaluations/{evaluation_id}",
    response={200: EvaluationOut, **errors(404)},
    operation_id="read_evaluation",
    url_name="evaluation",
    summary="One evaluation: its progress and its summary per agent",
)
def read_evaluation(request: AdminRequest, evaluation_id: int) -> Any:
    row = _found(records.evaluation(evaluation_id, timezone.now()), evaluation_id)
    summary = records.summary_of(row)
    data = {**_item(row), "summary": [asdict(entry) for entry in summary]}
    if not is_html(request) or row.status == "running":
        return respond(request, data, "adminui/evaluation.html")
    cases, following = page(lambda before, limit: records.cases_before(row.id, before, limit), None)
    return respond(
        request,
        data,
        "adminui/evaluation.html",
        chart=_chart(summary),
        criteria=sorted({key for entry in summary for key in entry.scores}),
        cases={"data": [_case(case, row) for case in cases], "next": following},
    )


@router.get(
    "/evaluations/{evaluation_id}/cases",
    response={200: CasePage, **errors(404)},
    operation_id="list_evaluation_cases",
    url_name="evaluation_cases",
    summary="An evaluation's cases, newest turn first: the question, every reply, its "
    "cost, latency and scores",
)
def list_cases(request: AdminRequest, evaluation_id: int, cursor: str | None = None) -> Any:
    row = _found(records.evaluation(evaluation_id, timezone.now()), evaluation_id)
    cases, following = page(
        lambda before, limit: records.cases_before(row.id, before, limit), cursor
    )
    data = {"data": [_case(case, row) for case in cases], "next": following}
    return respond(request, data, "adminui/evaluation_cases.html", evaluation=_item(row))


@router.delete(
    "/evaluations/{evaluation_id}",
    response={200: EvaluationItem, **errors(404, 409)},
    operation_id="cancel_evaluation",
    url_name="evaluation_cancel",
    summary="Cancel a running evaluation: no call starts after the answer",
)
async def cancel_evaluation(request: AdminRequest, evaluation_id: int) -> Any:
    row, cancelled = await request.runtime.cancel_evaluation(evaluation_id)
    found = _found(row, evaluation_id)
    if not cancelled:
        message = f"Evaluation {evaluation_id} is {found.status}: only a running one is cancelled"
        raise AdminError(409, message, "not_running")
    return written(request, reverse("admin:evaluation", args=[evaluation_id]), _item(found))


@router.post(
    "/evaluations/{evaluation_id}/cancel",
    response={200: EvaluationItem, **errors(404, 409)},
    operation_id="cancel_evaluation_by_form",
    url_name="evaluation_cancel_form",
    summary="Cancel a running evaluation (the same, for HTML forms)",
)
async def cancel_evaluation_by_form(request: AdminRequest, evaluation_id: int) -> Any:
    return await cancel_evaluation(request, evaluation_id)


def _found(row: records.EvaluationRow | None, evaluation_id: int) -> records.EvaluationRow:
    if row is None:
        raise AdminError(404, f"Evaluation {evaluation_id} does not exist", "not_found")
    return row


def _form_fields(request: AdminRequest) -> dict[str, Any]:
    """The form's fields: lists comma-separated, the source as ``agent:<name>`` or
    ``experiment:<name>``, empty ones left out."""
    form = form_data(request)
    fields: dict[str, Any] = {"name": str(form.get("name") or "")}
    kind, _, name = str(form.get("source") or "").partition(":")
    source: dict[str, Any] = {kind: name} if kind and name else {}
    for listed in ("candidates", "users", "judges"):
        names = [part.strip() for part in str(form.get(listed) or "").split(",") if part.strip()]
        if listed == "users":
            if names:
                source["users"] = names
        elif names or listed == "candidates":
            fields[listed] = names
    for single in ("since", "until", "limit"):
        if value := str(form.get(single) or "").strip():
            source[single] = value
    fields["source"] = source
    return fields


def _form_choices(request: AdminRequest) -> dict[str, Any]:
    config = request.runtime.holder.config
    if config is None:
        return {"agents": [], "experiments": [], "judges": []}
    return {
        "agents": [agent.name for agent in config.agents],
        "experiments": [experiment.name for experiment in config.experiments],
        "judges": [judge.name for judge in config.judges],
    }


def _item(row: records.EvaluationRow) -> dict[str, Any]:
    return {
        "id": row.id,
        "name": row.name,
        "status": row.status,
        "progress": {"done": row.done, "total": row.total},
        "candidates": row.candidates,
        "source": {
            "agent": row.source.get("agent"),
            "experiment": row.source.get("experiment"),
            "since": row.since,
            "until": row.until,
            "users": row.users,
            "limit": row.limit,
        },
        "judges": row.judges,
        "created_at": row.created_at,
        "finished_at": row.finished_at,
        "error": row.error or None,
    }


def _case(case: records.CaseRow, row: records.EvaluationRow) -> dict[str, Any]:
    return {
        "id": case.id,
        "user": case.user,
        "recorded_at": case.recorded_at,
        "question": case.question,
        "done": case.done,
        "original": _reply(case.original),
        "candidates": {
            name: _reply(case.candidates[name])
            for name in row.candidates
            if name in case.candidates
        },
    }


def _reply(replied: dict[str, Any]) -> dict[str, Any]:
    cost = replied.get("cost_micro_usd")
    return {
        "reply": replied.get("reply"),
        "error": replied.get("error") or None,
        "cost_usd": cost / 1e6 if cost is not None else None,
        "latency_ms": replied.get("latency_ms"),
        "scores": replied.get("scores", {}),
        "judge_errors": replied.get("judge_errors", {}),
    }


def _chart(summary: list[SummaryEntry]) -> BarChart | None:
    """Each agent's mean score over every criterion."""
    means = [
        (entry.agent, sum(stats.mean for stats in entry.scores.values()) / len(entry.scores))
        for entry in summary
        if entry.scores
    ]
    return score_bars("Mean score over every criterion (0 to 10)", means) if means else None
