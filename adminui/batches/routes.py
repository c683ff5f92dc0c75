"""Every user's batches (docs/batches.md): their progress and what their lines cost so
far, newest first."""

from datetime import datetime
from typing import Any

from ninja import Router
from pydantic import BaseModel

from adminui.context import AdminRequest
from adminui.rendering.negotiation import respond
from adminui.rendering.paging import PAGE_SIZE
from adminui.schemas import errors
from inference.batches.records import ENDED, batches_before, costs_of, line_counts

router = Router(tags=["batches"])


class Counts(BaseModel):
    total: int
    completed: int  # lines that succeeded
    failed: int  # lines that ended otherwise (failed, cancelled, expired)


class BatchOut(BaseModel):
    id: str
    user: str
    endpoint: str
    status: str  # OpenAI's batch statuses (a message batch's too)
    request_counts: Counts
    cost_usd: float
    created_at: datetime


class BatchPage(BaseModel):
    data: list[BatchOut]
    next: str | None


@router.get(
    "/batches",
    response={200: BatchPage, **errors()},
    operation_id="list_batches",
    url_name="batches",
    summary="Every user's batches, newest first: status, lines done and failed, cost so far; "
    "filter by user",
)
def list_batches(request: AdminRequest, user: str | None = None, cursor: str | None = None) -> Any:
    found = batches_before(user, cursor, PAGE_SIZE + 1)
    rows = found[:PAGE_SIZE]
    ids = [row.id for row in rows]
    counts, costs = line_counts(ids), costs_of(ids)
    data = {
        "data": [
            {
                "id": row.id,
                "user": row.user_id,
                "endpoint": row.endpoint,
                "status": row.status,
                "request_counts": {
                    "total": sum(counts[row.id].values()),
                    "completed": counts[row.id]["succeeded"],
                    "failed": sum(counts[row.id][status] for status in ENDED)
                    - counts[row.id]["succeeded"],
                },
                "cost_usd": costs.get(row.id, 0) / 1e6,
                "created_at": row.created_at,
            }
            for row in rows
        ],
        "next": rows[-1].id if len(found) > PAGE_SIZE else None,
    }
    return respond(request, data, "adminui/batches.html", filters={"user": user})
