"""A user's caps against their ledger: whether their usage, with what their calls in
progress reserve, has reached a cap (429 with ``Retry-After``), before each model call.
A cap its usage alone reached is final (``x-should-retry: false``): only time frees it,
so the wait is told and retrying sooner is pointless; one that requests in progress
reach frees as they end.

These functions are synchronous ORM code, run in a worker thread inside the admission's
transaction (``inference.money.admission``).
"""

import math
from datetime import datetime, timedelta

from django.db.models import Q, QuerySet, Sum

from inference.models import BudgetReservation, LedgerEntry
from inference.money.caps import TokenCap
from inference.neutral.errors import ApiError


def check_budgets(user_id: str, caps: tuple[TokenCap, ...], now: datetime) -> None:
    """Raise 429 when the user's usage plus what their requests in progress reserve in any
    capped window reached its cap."""
    if not caps:
        return
    # Reservations before the ledger: a request that ends between the two reads is then
    # counted twice (its reservation and its ledger row), never missed.
    held = reserved(user_id, now)
    used = usage_in_windows(user_id, {cap.window: cap.seconds for cap in caps}, now)
    for cap in caps:
        spent = cap.amount(*used[cap.window])
        reserved_amount = cap.amount(*held)
        final = spent >= cap.cap
        if final:
            wait = retry_after(user_id, cap, spent, now)
            detail = f"{cap.used(spent)} in the last {cap.window}"
        elif spent + reserved_amount >= cap.cap:
            wait = 1  # requests in progress settle their reservations when they end
            detail = (
                f"{cap.used(spent)} in the last {cap.window} and "
                f"{cap.shown(reserved_amount)} reserved by requests in progress"
            )
        else:
            continue
        raise refusal(cap, f"{detail} (rolling {cap.seconds} s)", wait, final)


def refusal(cap: TokenCap, detail: str, wait: int, final: bool) -> ApiError:
    code = "insufficient_quota" if cap.usd else "rate_limit_exceeded"
    return ApiError(
        429,
        f"{'Spend' if cap.usd else 'Token'} budget exhausted: {detail} against a cap of "
        f"{cap.shown(cap.cap)}; retry in {wait} s",
        code=code,
        error_type=code,
        param=cap.source,
        headers={"Retry-After": str(wait)},
        final=final,
    )


def reserved(user_id: str, now: datetime) -> tuple[int, int]:
    """Tokens and micro-USD held by the user's calls in progress, and by their calls done
    whose work is not billed yet (expired reservations left out)."""
    live = BudgetReservation.objects.filter(user_id=user_id, expires_at__gt=now)
    totals = live.aggregate(tokens=Sum("tokens"), micro_usd=Sum("micro_usd"))
    return totals["tokens"] or 0, totals["micro_usd"] or 0


def usage_in_windows(
    user_id: str, windows: dict[str, int], now: datetime
) -> dict[str, tuple[int, int]]:
    """Tokens and micro-USD billed to the user in each named window (length in seconds),
    in one query."""
    sums = {}
    for window, seconds in windows.items():
        recent = Q(created_at__gt=now - timedelta(seconds=seconds))
        sums[f"{window}_tokens"] = Sum("total_tokens", filter=recent)
        sums[f"{window}_usd"] = Sum("cost_micro_usd", filter=recent)
    oldest = now - timedelta(seconds=max(windows.values()))
    billed = LedgerEntry.objects.filter(user_id=user_id, kind="turn", created_at__gt=oldest)
    totals = billed.aggregate(**sums)
    return {
        window: (totals[f"{window}_tokens"] or 0, totals[f"{window}_usd"] or 0)
        for window in windows
    }


def retry_after(user_id: str, cap: TokenCap, used: int, now: datetime) -> int:
    """Whole seconds until enough of the window's usage (tokens or micro-USD) has aged out
    to fall below the cap."""
    rows = LedgerEntry.objects.filter(user_id=user_id, kind="turn")
    counted = "cost_micro_usd" if cap.usd else "total_tokens"
    return window_wait(rows, counted, used, cap.cap, cap.seconds, now)


def window_wait(
    rows: QuerySet[LedgerEntry], counted: str, used: int, cap: int, seconds: int, now: datetime
) -> int:
    """Whole seconds until enough of ``rows``' ``counted`` field over the rolling window
    of ``seconds`` (``used`` in all) has aged out to fall below ``cap``."""
    if cap == 0:
        return seconds
    entries = (
        rows.filter(created_at__gt=now - timedelta(seconds=seconds))
        .order_by("created_at")
        .values_list("created_at", counted)
    )
    remaining = used
    for created_at, amount in entries.iterator():
        remaining -= int(amount or 0)
        if remaining < cap:
            leaves_at: datetime = created_at + timedelta(seconds=seconds)
            return max(1, math.ceil((leaves_at - now).total_seconds()))
    return seconds
