"""Automation's records (docs/automation.md): the triggers with their next firing and
last runs (``/admin/triggers``), the smoke tests with their runs' transcripts and scores
(``/admin/smoke-tests``), and a smoke test's run started by hand."""

from datetime import datetime
from typing import Any

from django.urls import reverse
from ninja import Router
from ninja.responses import Status
from pydantic import BaseModel

from adminui.context import AdminRequest
from adminui.rendering.errors import AdminError
from adminui.rendering.negotiation import is_html, respond, written
from adminui.schemas import errors
from inference.automation import records

router = Router(tags=["automation"])


class TriggerRunOut(BaseModel):
    id: int
    status: str  # queued, running, done, failed
    reply: str
    cost_usd: float | None
    created_at: datetime
    error: str
    delivery: str  # "", delivered or failed


class TriggerOut(BaseModel):
    name: str
    agent: str
    user: str
    kind: str  # schedule, webhook or on_start
    next_fire_at: datetime | None
    runs: list[TriggerRunOut]


class TriggerList(BaseModel):
    data: list[TriggerOut]


class Line(BaseModel):
    role: str  # persona or agent
    text: str
    conversation: int = 1  # of the run's repetitions, from 1


class SmokeRunOut(BaseModel):
    id: int
    status: str
    transcript: list[Line]
    scores: dict[str, Any]  # {judge: {mean, criteria: {name: {score, reasoning}}}}
    passed: bool | None = None
    error: str = ""
    created_at: datetime | None = None


class SmokeTestOut(BaseModel):
    name: str
    agent: str
    persona: str
    turns: int
    stop_marker: str | None = None
    repetitions: int = 1
    judges: list[str]
    min_score: float | None
    runs: list[SmokeRunOut]


class SmokeTestList(BaseModel):
    data: list[SmokeTestOut]


@router.get(
    "/triggers",
    response={200: TriggerList, **errors()},
    operation_id="list_triggers",
    url_name="triggers",
    summary="The triggers: kind, next firing (schedules) and last runs, newest first",
)
def list_triggers(request: AdminRequest) -> Any:
    config = request.runtime.holder.config
    data = {"data": records.triggers(config) if config is not None else []}
    return respond(request, data, "adminui/triggers.html")


@router.get(
    "/smoke-tests",
    response={200: SmokeTestList, **errors()},
    operation_id="list_smoke_tests",
    url_name="smoke_tests",
    summary="The smoke tests and their last runs: transcript, scores, passed",
)
def list_smoke_tests(request: AdminRequest) -> Any:
    config = request.runtime.holder.config
    data = {"data": records.smoke_tests(config) if config is not None else []}
    return respond(request, data, "adminui/smoke_tests.html")


@router.post(
    "/smoke-tests/{name}/runs",
    response={202: SmokeRunOut, **errors(404)},
    operation_id="run_smoke_test",
    url_name="smoke_test_run",
    summary="Run a smoke test in the background: 202 with the queued run",
)
async def run_smoke_test(request: AdminRequest, name: str) -> Any:
    run = await request.runtime.start_smoke_test(name)
    if run is None:
        raise AdminError(404, f"There is no smoke test named {name!r}", "not_found")
    if is_html(request):
        return written(request, reverse("admin:smoke_tests"), run)
    return Status(202, run)
