"""What guardrails did (docs/guardrails.md): their events, newest first, never with the
text they matched."""

from datetime import datetime
from typing import Any

from ninja import Router
from pydantic import BaseModel

from adminui.context import AdminRequest
from adminui.rendering.negotiation import respond
from adminui.rendering.paging import page
from adminui.schemas import errors
from inference.guardrails.events import GuardrailEvent, events_before

router = Router(tags=["guardrails"])


class GuardrailEventOut(BaseModel):
    id: int
    created_at: datetime
    user: str
    key: int | None
    agent: str
    guardrail: str
    on: str  # input, output or tool_results
    action: str  # redacted, blocked or warned
    detail: dict[str, Any]  # the entities found and their counts (a loop: the tool, times)


class GuardrailEventPage(BaseModel):
    data: list[GuardrailEventOut]
    next: str | None


@router.get(
    "/guardrails/events",
    response={200: GuardrailEventPage, **errors()},
    operation_id="list_guardrail_events",
    url_name="guardrail_events",
    summary="Guardrails that redacted, blocked or warned, newest first; filter by user, "
    "agent and guardrail",
)
def list_events(
    request: AdminRequest,
    user: str | None = None,
    agent: str | None = None,
    guardrail: str | None = None,
    cursor: str | None = None,
) -> Any:
    rows, following = page(
        lambda before, limit: events_before(user, agent, guardrail, before, limit), cursor
    )
    data = {"data": [_described(row) for row in rows], "next": following}
    filters = {"user": user, "agent": agent, "guardrail": guardrail}
    return respond(request, data, "adminui/guardrail_events.html", filters=filters)


def _described(row: GuardrailEvent) -> dict[str, Any]:
    return {
        "id": row.id,
        "created_at": row.created_at,
        "user": row.user_id,
        "key": row.api_key_id,
        "agent": row.agent,
        "guardrail": row.guardrail,
        "on": row.stage,
        "action": row.action,
        "detail": row.detail,
    }
