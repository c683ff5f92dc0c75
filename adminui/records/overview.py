"""What the gateway recorded, read-only: the overview, conversations and token usage."""

from dataclasses import asdict
from datetime import timedelta
from typing import Any

from django.utils import timezone
from ninja import Router

from adminui.context import AdminRequest
from adminui.rendering.errors import AdminError
from adminui.rendering.negotiation import is_html, respond
from adminui.rendering.paging import page
from adminui.schemas import MessagePage, OverviewOut, UsageOut, errors
from agents import store
from inference.ledger import queries
from inference.reconciliation.records import flagged_rows

router = Router(tags=["records"])
RECENT_USERS = 200


@router.get(
    "/",
    response={200: OverviewOut, **errors()},
    operation_id="overview",
    url_name="overview",
    summary="Agents, experiments and the last day's traffic",
)
def overview(request: AdminRequest) -> Any:
    holder = request.runtime.holder
    data = store.read_file(holder).data
    traffic = queries.traffic_since(timezone.now() - timedelta(days=1))
    agents = []
    for agent in data.get("agents") or []:
        if not isinstance(agent, dict):
            continue
        seen = traffic.get(str(agent.get("name")))
        agents.append(
            {
                "name": str(agent.get("name")),
                "provider": str(agent.get("provider")),
                "model": str(agent.get("model")),
                "requests_24h": seen.requests if seen else 0,
                "tokens_24h": seen.tokens if seen else 0,
            }
        )
    experiments = [
        str(item.get("name")) for item in data.get("experiments") or [] if isinstance(item, dict)
    ]
    config = holder.config
    drift = [asdict(row) for row in flagged_rows(config)] if config is not None else []
    body = {
        "agents": agents,
        "experiments": experiments,
        "problems": holder.problems,
        "spend_drift": drift,
    }
    return respond(request, body, "adminui/overview.html")


@router.get(
    "/conversations",
    response={200: MessagePage, **errors()},
    operation_id="list_conversations",
    url_name="conversations",
    summary="Stored messages, newest first (one user's with ?user=)",
)
def conversations(request: AdminRequest, user: str | None = None, cursor: str | None = None) -> Any:
    rows, following = page(
        lambda before, limit: queries.stored_messages(user, before, limit), cursor
    )
    data = {
        "data": [{key: value for key, value in asdict(row).items() if key != "id"} for row in rows],
        "next": following,
    }
    users = _recent_users("history") if is_html(request) and not user else []
    return respond(request, data, "adminui/conversations.html", user=user, users=users)


@router.get(
    "/usage",
    response={200: UsageOut, **errors()},
    operation_id="read_usage",
    url_name="usage",
    summary="A user's tokens in each rolling window (hour, day, 30 days)",
)
def usage(request: AdminRequest, user: str | None = None) -> Any:
    if not user:
        if not is_html(request):
            raise AdminError(
                400, "user: the query parameter is required (?user=...)", "bad_request"
            )
        return respond(request, None, "adminui/usage.html", users=_recent_users("ledger"))
    tokens, cost = queries.usage_by_window(user)
    body = {"user": user, "windows": tokens, "cost_usd": cost}
    return respond(request, body, "adminui/usage.html", user=user)


def _recent_users(source: str) -> list[str]:
    return queries.recent_users(source, timezone.now() - timedelta(days=30), RECENT_USERS)  # type: ignore[arg-type]
