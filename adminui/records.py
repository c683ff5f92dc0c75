"""What the gateway recorded, read-only: conversations and token usage per user."""

from datetime import timedelta
from typing import Any

from django.db.models import Count, Sum
from django.http import HttpRequest
from django.utils import timezone
from ninja import Router

from adminui.collection_routes import errors
from adminui.negotiation import is_html, respond
from adminui.paging import page
from adminui.schemas import MessagePage, OverviewOut, UsageOut
from agents import store
from gateway import runtime
from inference.budgets import usage_in_windows
from inference.models import LedgerEntry, StoredMessage

router = Router(tags=["records"])
WINDOWS = {"hour": 3600, "day": 86400, "month": 30 * 86400}


@router.get(
    "/",
    response={200: OverviewOut, **errors()},
    operation_id="overview",
    url_name="overview",
    summary="Agents, experiments and the last day's traffic",
)
def overview(request: HttpRequest) -> Any:
    holder = runtime.current().holder
    data = store.read_file(holder).data
    since = timezone.now() - timedelta(days=1)
    traffic = {
        row["agent"]: row
        for row in LedgerEntry.objects.filter(created_at__gt=since)
        .values("agent")
        .annotate(requests=Count("completion_id", distinct=True), tokens=Sum("total_tokens"))
    }
    agents = [
        {
            "name": str(agent.get("name")),
            "provider": str(agent.get("provider")),
            "model": str(agent.get("model")),
            "requests_24h": traffic.get(agent.get("name"), {}).get("requests", 0),
            "tokens_24h": traffic.get(agent.get("name"), {}).get("tokens") or 0,
        }
        for agent in data.get("agents") or []
        if isinstance(agent, dict)
    ]
    experiments = [
        str(item.get("name")) for item in data.get("experiments") or [] if isinstance(item, dict)
    ]
    body = {"agents": agents, "experiments": experiments, "problems": holder.problems}
    return respond(request, body, "adminui/overview.html")


@router.get(
    "/conversations",
    response={200: MessagePage, **errors()},
    operation_id="list_conversations",
    url_name="conversations",
    summary="Stored messages, newest first (one user's with ?user=)",
)
def conversations(request: HttpRequest, user: str | None = None, cursor: str | None = None) -> Any:
    messages = StoredMessage.objects.all()
    if user:
        messages = messages.filter(user_id=user)
    rows, following = page(messages, cursor)
    data = {
        "data": [
            {
                "user": row.user_id,
                "model": row.model,
                "role": row.role,
                "content": row.content,
                "created_at": row.created_at,
            }
            for row in rows
        ],
        "next": following,
    }
    users = _recent_users(StoredMessage) if is_html(request) and not user else []
    return respond(request, data, "adminui/conversations.html", user=user, users=users)


@router.get(
    "/usage",
    response={200: UsageOut, **errors()},
    operation_id="read_usage",
    url_name="usage",
    summary="A user's tokens in each rolling window (hour, day, 30 days)",
)
def usage(request: HttpRequest, user: str | None = None) -> Any:
    if not user:
        if not is_html(request):
            raise store.BadRequest("user: the query parameter is required (?user=...)")
        return respond(request, None, "adminui/usage.html", users=_recent_users(LedgerEntry))
    windows = usage_in_windows(user, WINDOWS, timezone.now())
    return respond(request, {"user": user, "windows": windows}, "adminui/usage.html", user=user)


def _recent_users(model: type[StoredMessage] | type[LedgerEntry]) -> list[str]:
    since = timezone.now() - timedelta(days=30)
    rows = (
        model.objects.filter(created_at__gt=since)
        .values_list("user_id", flat=True)
        .order_by("user_id")
        .distinct()
    )
    return list(rows[:200])
