"""Read-only queries over what ``/v1`` recorded (stored history and the token ledger).

The admin shows recorded data only through these functions, so the tables stay the
business of this app. Each is synchronous ORM code.
"""

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from django.db.models import Count, Sum
from django.utils import timezone

from inference.budgets import usage_in_windows
from inference.models import LedgerEntry, StoredMessage
from inference.options import WINDOWS


@dataclass(frozen=True)
class MessageRow:
    id: int
    user: str
    model: str
    role: str
    content: str
    created_at: datetime


@dataclass(frozen=True)
class AgentTraffic:
    requests: int
    tokens: int


def stored_messages(user: str | None, before_id: int | None, limit: int) -> list[MessageRow]:
    """Stored messages, newest first (one user's when ``user`` is given)."""
    rows = StoredMessage.objects.all()
    if user:
        rows = rows.filter(user_id=user)
    if before_id is not None:
        rows = rows.filter(id__lt=before_id)
    return [
        MessageRow(row.id, row.user_id, row.model, row.role, row.content, row.created_at)
        for row in rows.order_by("-id")[:limit]
    ]


def usage_by_window(user: str) -> dict[str, int]:
    """The user's billed tokens in each rolling budget window (hour, day, month)."""
    return usage_in_windows(user, dict(WINDOWS.values()), timezone.now())


def traffic_since(since: datetime) -> dict[str, AgentTraffic]:
    """Requests (distinct completions) and tokens billed per agent since ``since``."""
    rows = (
        LedgerEntry.objects.filter(created_at__gt=since)
        .values("agent")
        .annotate(requests=Count("completion_id", distinct=True), tokens=Sum("total_tokens"))
    )
    return {row["agent"]: AgentTraffic(row["requests"], row["tokens"] or 0) for row in rows}


def recent_users(source: Literal["history", "ledger"], since: datetime, limit: int) -> list[str]:
    """Users with stored messages (``history``) or billed tokens (``ledger``) since ``since``."""
    model = StoredMessage if source == "history" else LedgerEntry
    rows = (
        model.objects.filter(created_at__gt=since)
        .values_list("user_id", flat=True)
        .order_by("user_id")
        .distinct()
    )
    return list(rows[:limit])
