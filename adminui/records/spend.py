"""What was spent, in USD: ``/admin/spend`` grouped by user, agent, key, model or day, and
a page with spend per day stacked by agent and tables per user and per key."""

from dataclasses import asdict
from datetime import datetime, timedelta
from typing import Any, Literal

from django.utils import timezone
from ninja import Router
from pydantic import BaseModel

from adminui.context import AdminRequest
from adminui.records.charts import stacked_bars
from adminui.rendering.errors import AdminError
from adminui.rendering.negotiation import is_html, respond
from adminui.schemas import errors
from inference.ledger import queries

router = Router(tags=["records"])
PAGE_SIZE = 100
CHART_DAYS = 30


class SpendRowOut(BaseModel):
    group: str | int | None
    requests: int
    input_tokens: int
    cached_tokens: int
    output_tokens: int
    cost_usd: float
    saved_usd: float


class SpendPage(BaseModel):
    data: list[SpendRowOut]
    next: str | None


@router.get(
    "/spend",
    response={200: SpendPage, **errors()},
    operation_id="read_spend",
    url_name="spend",
    summary="Spend in USD and tokens, grouped by user, agent, key, model or day",
)
def read_spend(
    request: AdminRequest,
    group_by: Literal["user", "agent", "key", "model", "day"] = "user",
    since: datetime | None = None,
    until: datetime | None = None,
    cursor: str | None = None,
) -> Any:
    offset = _offset(cursor)
    rows = queries.spend(group_by, since, until, offset, PAGE_SIZE + 1)
    following = str(offset + PAGE_SIZE) if len(rows) > PAGE_SIZE else None
    data = {"data": [asdict(row) for row in rows[:PAGE_SIZE]], "next": following}
    if not is_html(request):
        return data
    start = timezone.now() - timedelta(days=CHART_DAYS)
    chart = stacked_bars(
        f"Spend per day by agent, last {CHART_DAYS} days (USD)",
        queries.spend_per_day_by_agent(start),
    )
    tables = {
        "user": queries.spend("user", since, until, 0, PAGE_SIZE),
        "key": queries.spend("key", since, until, 0, PAGE_SIZE),
    }
    return respond(request, data, "adminui/spend.html", chart=chart, tables=tables)


def _offset(cursor: str | None) -> int:
    if cursor is None:
        return 0
    if cursor.isascii() and cursor.isdigit() and len(cursor) <= 9:
        return int(cursor)
    raise AdminError(400, "cursor: use the value of next from the previous page", "bad_request")
