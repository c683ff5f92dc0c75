"""Spend reconciliation (docs/reconciliation.md): ``/admin/reconciliation``, what each
provider with ``billing`` billed per UTC day and model beside what the gateway computed,
with a chart per provider, and ``POST /admin/reconciliation/run`` to fetch the bills now."""

from dataclasses import asdict
from typing import Annotated, Any

from django.urls import reverse
from ninja import Router
from ninja.responses import Status
from pydantic import BaseModel, Field

from adminui.context import AdminRequest
from adminui.reconciliation.chart import provider_charts
from adminui.rendering.errors import loaded_config
from adminui.rendering.negotiation import is_html, respond, written
from adminui.schemas import DriftRowOut, errors
from inference.reconciliation.records import Reconciliation, reconciliation

router = Router(tags=["records"])


class FetchErrorOut(BaseModel):
    provider: str
    error: str = Field(description="Why its billing API's last answer was not a bill.")


class ReconciliationOut(BaseModel):
    data: list[DriftRowOut]
    errors: list[FetchErrorOut]


@router.get(
    "/reconciliation",
    response={200: ReconciliationOut, **errors(503)},
    operation_id="read_reconciliation",
    url_name="reconciliation",
    summary="What each provider billed per UTC day and model, beside what the gateway computed",
)
def read_reconciliation(
    request: AdminRequest, days: Annotated[int | None, Field(ge=1, le=90)] = None
) -> Any:
    config = loaded_config(request)
    found = reconciliation(config, days)
    data = _data(found)
    if not is_html(request):
        return data
    return respond(
        request,
        data,
        "adminui/reconciliation.html",
        found=found,
        charts=provider_charts(found.rows),
        settings=config.reconciliation,
        days=days or config.reconciliation.days,
    )


@router.post(
    "/reconciliation/run",
    response={200: ReconciliationOut, 202: ReconciliationOut, **errors(503)},
    operation_id="run_reconciliation",
    url_name="reconciliation_run",
    summary="Fetch the bills now: 200 with the rows, or 202 while a fetch is under way elsewhere",
)
async def run_reconciliation(request: AdminRequest) -> Any:
    fetched, found = await request.runtime.reconcile(loaded_config(request))
    if is_html(request):
        return written(request, reverse("admin:reconciliation"))
    return Status(200 if fetched else 202, _data(found))


def _data(found: Reconciliation) -> dict[str, Any]:
    return {
        "data": [asdict(row) for row in found.rows],
        "errors": [asdict(error) for error in found.errors],
    }
