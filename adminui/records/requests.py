"""Every ``/v1`` request the gateway kept (docs/telemetry.md): the list, and one request
with the waterfall of its spans, the same tree the OpenTelemetry export carries."""

from datetime import datetime
from typing import Any

from ninja import Router
from pydantic import BaseModel

from adminui.context import AdminRequest
from adminui.rendering.errors import AdminError
from adminui.rendering.negotiation import respond
from adminui.rendering.paging import page
from adminui.schemas import errors
from inference.ledger import requests

router = Router(tags=["requests"])


class RequestOut(BaseModel):
    id: str  # the X-Request-Id
    created_at: datetime
    path: str
    user: str
    model: str  # what the client asked for: an agent or an experiment
    agent: str  # the agent that answered
    experiment: str
    variant: str
    completion_id: str
    status: int  # the HTTP status code
    error: str
    stream: bool
    latency_ms: float
    input_tokens: int
    output_tokens: int
    cost_usd: float | None
    upstream: str  # <provider>/<model> of the final attempt
    attempts: int


class RequestPage(BaseModel):
    data: list[RequestOut]
    next: str | None


class SpanOut(BaseModel):
    name: str
    kind: str
    start_ms: float  # after the request began
    duration_ms: float
    status: str  # "ok" or "error"
    attributes: dict[str, Any]
    children: list["SpanOut"]


class CacheOut(BaseModel):
    result: str  # hit, miss or bypass
    age_s: int | None  # a hit's: seconds since its answer was paid for
    matched_question: str | None  # a semantic hit's: the cached question it matched


class RequestDetail(RequestOut):
    cache: CacheOut | None  # a cached agent's request: what the response cache did
    spans: list[SpanOut]


@router.get(
    "/requests",
    response={200: RequestPage, **errors()},
    operation_id="list_requests",
    url_name="requests",
    summary="Requests to /v1, newest first; filter by user, agent, HTTP status, since",
)
def list_requests(
    request: AdminRequest,
    user: str | None = None,
    agent: str | None = None,
    status: int | None = None,
    since: datetime | None = None,
    cursor: str | None = None,
) -> Any:
    where = requests.RequestFilter(user=user, agent=agent, status=status, since=since)
    rows, following = page(
        lambda before, limit: requests.requests_before(where, before, limit), cursor
    )
    data = {"data": [_described(row) for row in rows], "next": following}
    filters = {"user": user, "agent": agent, "status": status, "since": since}
    return respond(request, data, "adminui/requests.html", filters=filters)


@router.get(
    "/requests/{request_id}",
    response={200: RequestDetail, **errors(404)},
    operation_id="read_request",
    url_name="request",
    summary="One request (by X-Request-Id or completion id) and the tree of its spans",
)
def read_request(request: AdminRequest, request_id: str) -> Any:
    row = requests.request_by_id(request_id)
    if row is None:
        raise AdminError(404, f"No request {request_id} is kept", "not_found")
    spans = requests.span_tree(row.spans)
    detail = {**_described(row), "cache": row.cache, "spans": spans}
    total = spans[0]["duration_ms"] if spans else row.latency_ms
    bars = _waterfall(spans, max(total, _end_ms(spans), 0.001))
    return respond(request, detail, "adminui/request.html", bars=bars)


def _described(row: requests.RequestRecord) -> dict[str, Any]:
    cost = row.cost_micro_usd
    return {
        "id": row.request_id,
        "created_at": row.created_at,
        "path": row.path,
        "user": row.user_id,
        "model": row.model,
        "agent": row.agent,
        "experiment": row.experiment,
        "variant": row.variant,
        "completion_id": row.completion_id,
        "status": row.status,
        "error": row.error,
        "stream": row.stream,
        "latency_ms": row.latency_ms,
        "input_tokens": row.input_tokens,
        "output_tokens": row.output_tokens,
        "cost_usd": None if cost is None else cost / 1_000_000,
        "upstream": row.upstream,
        "attempts": row.attempts,
    }


def _end_ms(spans: list[dict[str, Any]]) -> float:
    """When the last span ends (judges may end after the request's own span)."""
    return max(
        (max(span["start_ms"] + span["duration_ms"], _end_ms(span["children"])) for span in spans),
        default=0.0,
    )


def _waterfall(
    spans: list[dict[str, Any]], total_ms: float, depth: int = 0
) -> list[dict[str, Any]]:
    """The rows of the waterfall, depth first: each span with its bar's offset and width
    in percent of the whole request."""
    rows: list[dict[str, Any]] = []
    for span in spans:
        rows.append(
            {
                **span,
                "depth": depth,
                "left": 100 * span["start_ms"] / total_ms,
                "width": max(0.3, 100 * span["duration_ms"] / total_ms),
            }
        )
        rows += _waterfall(span["children"], total_ms, depth + 1)
    return rows
