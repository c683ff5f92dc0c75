"""Read-only queries over what ``/v1`` recorded (stored history, the token ledger, judge
scores).

The admin shows recorded data only through these functions, so the tables stay the
business of this app. Each is synchronous ORM code.
"""

from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any, Literal

from django.db.models import Avg, Count, F, Min, Q, Sum
from django.db.models.functions import TruncDay, TruncHour
from django.utils import timezone

from inference.models import JudgeScore, LedgerEntry, StoredMessage
from inference.money.budgets import usage_in_windows
from inference.money.caps import WINDOWS

# The rows that stand for a user's request: a turn, or one the response cache answered.
REQUEST_KINDS = ("turn", "cache_hit")


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
    hits: int = 0  # requests the response cache answered wholly


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


def usage_by_window(user: str) -> tuple[dict[str, int], dict[str, float]]:
    """The user's billed tokens, and their cost in USD, in each rolling budget window
    (hour, day, month)."""
    used = usage_in_windows(user, dict(WINDOWS.values()), timezone.now())
    tokens = {window: amounts[0] for window, amounts in used.items()}
    cost = {window: amounts[1] / 1e6 for window, amounts in used.items()}
    return tokens, cost


def traffic_since(since: datetime) -> dict[str, AgentTraffic]:
    """Requests (distinct completions, the response cache's hits included), tokens billed
    and hits per agent since ``since``."""
    rows = (
        LedgerEntry.objects.filter(created_at__gt=since, kind__in=REQUEST_KINDS)
        .values("agent")
        .annotate(
            requests=Count("completion_id", distinct=True),
            tokens=Sum("total_tokens", filter=Q(kind="turn")),
            hits=Count("id", filter=Q(kind="cache_hit")),
        )
    )
    return {
        row["agent"]: AgentTraffic(row["requests"], row["tokens"] or 0, row["hits"]) for row in rows
    }


def recent_users(source: Literal["history", "ledger"], since: datetime, limit: int) -> list[str]:
    """Users with stored messages (``history``) or billed tokens (``ledger``) since ``since``."""
    model = StoredMessage if source == "history" else LedgerEntry
    recent = Q(created_at__gt=since) & (Q() if source == "history" else Q(kind="turn"))
    rows = (
        model.objects.filter(recent)
        .values_list("user_id", flat=True)
        .order_by("user_id")
        .distinct()
    )
    return list(rows[:limit])


@dataclass(frozen=True)
class ScoreRow:
    id: int
    created_at: datetime
    user: str
    agent: str
    experiment: str
    variant: str
    judge: str
    criterion: str
    score: int
    reasoning: str
    judge_model: str
    completion_id: str


@dataclass(frozen=True)
class VariantStats:
    agent: str
    users: int
    requests: int
    tokens: int
    scores: dict[str, float]  # mean by "judge.criterion"
    mean_cost_usd: float | None  # per request, over those with a known cost
    # A bandit's: the mean of its metric, and that less its cost weight times the cost.
    mean_score: float | None = None
    mean_reward: float | None = None


@dataclass(frozen=True)
class TrendPoint:
    """The mean of one series (a "judge.criterion", or a variant) in one time bucket."""

    bucket: datetime
    series: str
    mean: float
    count: int


def scores(
    agent: str | None, experiment: str | None, judge: str | None, before_id: int | None, limit: int
) -> list[ScoreRow]:
    """Judge scores, newest first, filtered by whatever is given."""
    rows = JudgeScore.objects.all()
    for field, value in (("agent", agent), ("experiment", experiment), ("judge", judge)):
        if value:
            rows = rows.filter(**{field: value})
    if before_id is not None:
        rows = rows.filter(id__lt=before_id)
    fields = [name for name in ScoreRow.__dataclass_fields__ if name != "user"]
    return [
        ScoreRow(user=values.pop("user_id"), **values)
        for values in rows.order_by("-id").values("user_id", *fields)[:limit]
    ]


def experiment_stats(
    experiment: str, variants: list[str], metric: str | None = None, cost_weight: float = 0.0
) -> list[VariantStats]:
    """Per variant: the users it served, its requests and tokens (billed turns only, so not
    shadow runs), its mean cost per request, and its mean score per judge criterion inside
    the experiment; with a bandit's ``metric``, that score and the reward (the score less
    ``cost_weight`` points per USD)."""
    traffic: dict[str, Any] = {
        row["variant"]: row
        for row in LedgerEntry.objects.filter(experiment=experiment, kind="turn")
        .values("variant")
        .annotate(
            users=Count("user_id", distinct=True),
            requests=Count("completion_id", distinct=True),
            tokens=Sum("total_tokens"),
            cost=Avg("cost_micro_usd"),
        )
    }
    means: dict[str, dict[str, float]] = {}
    for row in (
        JudgeScore.objects.filter(experiment=experiment)
        .values("variant", "judge", "criterion")
        .annotate(mean=Avg("score"))
    ):
        key = f"{row['judge']}.{row['criterion']}"
        means.setdefault(row["variant"], {})[key] = round(float(row["mean"]), 2)
    stats = []
    for name in variants:
        seen = traffic.get(name, {})
        cost = seen["cost"] / 1e6 if seen.get("cost") is not None else None
        score = means.get(name, {}).get(metric) if metric is not None else None
        reward = None if score is None else round(score - cost_weight * (cost or 0.0), 4)
        stats.append(
            VariantStats(
                agent=name,
                users=seen.get("users") or 0,
                requests=seen.get("requests") or 0,
                tokens=seen.get("tokens") or 0,
                scores=dict(sorted(means.get(name, {}).items())),
                mean_cost_usd=cost,
                mean_score=score,
                mean_reward=reward,
            )
        )
    return stats


def score_trend(
    *, agent: str | None = None, experiment: str | None = None, since: datetime
) -> tuple[str, dict[str, list[TrendPoint]]]:
    """Mean scores over time: for an agent, one series per "judge.criterion"; for an
    experiment, per criterion one series per variant. Hourly buckets when the data spans
    two days or less, else daily. Returns (the bucket size, the points by chart)."""
    rows = JudgeScore.objects.filter(created_at__gt=since)
    rows = rows.filter(agent=agent) if agent else rows.filter(experiment=experiment)
    earliest = rows.aggregate(earliest=Min("created_at"))["earliest"]
    hourly = earliest is None or timezone.now() - earliest <= timedelta(days=2)
    truncate = TruncHour if hourly else TruncDay
    per_variant = ("variant",) if not agent else ()
    grouped = (
        rows.annotate(bucket=truncate("created_at"))
        .values("bucket", "judge", "criterion", *per_variant)
        .annotate(mean=Avg("score"), count=Count("id"))
        .order_by("bucket")
    )
    charts: dict[str, list[TrendPoint]] = {}
    for row in grouped:
        metric = f"{row['judge']}.{row['criterion']}"
        chart, series = ("scores", metric) if agent else (metric, row["variant"])
        point = TrendPoint(row["bucket"], series, float(row["mean"]), row["count"])
        charts.setdefault(chart, []).append(point)
    return ("hour" if hourly else "day"), dict(sorted(charts.items()))


SpendGroup = Literal["user", "agent", "key", "model", "day"]
_SPEND_FIELDS: dict[str, Any] = {
    "user": F("user_id"),
    "agent": F("agent"),
    "key": F("api_key_id"),
    "model": F("model"),
    "day": TruncDay("created_at"),
}


@dataclass(frozen=True)
class SpendRow:
    group: str | int | None  # the user, agent, key id (None: no key), model or day
    requests: int  # turns, cache hits included (judge and shadow runs add cost only)
    input_tokens: int  # billed: tokens the response cache answered with are not
    cached_tokens: int
    output_tokens: int
    cost_usd: float  # calls without a known price count 0
    saved_usd: float  # what the response cache saved


def spend(
    group_by: SpendGroup,
    since: datetime | None,
    until: datetime | None,
    offset: int,
    limit: int,
) -> list[SpendRow]:
    """Spend grouped by ``group_by`` between ``since`` and ``until`` (either may be None),
    dearest first (days: newest first)."""
    # Judges and shadows are charged to agents and experiments, never to a user or key.
    rows = (
        LedgerEntry.objects.filter(kind__in=REQUEST_KINDS)
        if group_by in ("user", "key")
        else LedgerEntry.objects.all()
    )
    billed = ~Q(kind="cache_hit")
    if since is not None:
        rows = rows.filter(created_at__gte=since)
    if until is not None:
        rows = rows.filter(created_at__lt=until)
    grouped = (
        rows.annotate(group=_SPEND_FIELDS[group_by])
        .values("group")
        .annotate(
            requests=Count("id", filter=Q(kind__in=REQUEST_KINDS)),
            input_tokens=Sum("prompt_tokens", filter=billed),
            cached_tokens=Sum("cached_tokens", filter=billed),
            output_tokens=Sum("completion_tokens", filter=billed),
            cost=Sum("cost_micro_usd"),
            saved=Sum("saved_micro_usd"),
        )
        .order_by("-group" if group_by == "day" else "-cost", "group")
    )
    return [
        SpendRow(
            group=row["group"].date().isoformat() if group_by == "day" else row["group"],
            requests=row["requests"],
            input_tokens=row["input_tokens"] or 0,
            cached_tokens=row["cached_tokens"] or 0,
            output_tokens=row["output_tokens"] or 0,
            cost_usd=(row["cost"] or 0) / 1e6,
            saved_usd=(row["saved"] or 0) / 1e6,
        )
        for row in grouped[offset : offset + limit]
    ]


def spend_per_day_by_agent(since: datetime) -> list[tuple[datetime, str, float]]:
    """(day, agent, USD) since ``since``, for the spend chart."""
    rows = (
        LedgerEntry.objects.filter(created_at__gte=since)
        .annotate(day=TruncDay("created_at"))
        .values("day", "agent")
        .annotate(cost=Sum("cost_micro_usd"))
        .order_by("day", "agent")
    )
    return [(row["day"], row["agent"], (row["cost"] or 0) / 1e6) for row in rows]
