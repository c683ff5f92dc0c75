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
from functools import cache

from django.db import connection
from django.db.models import QuerySet

from inference.models import BudgetReservation, LedgerEntry
from inference.money.caps import TokenCap
from inference.neutral.errors import ApiError


def check_budgets(user_id: str, caps: tuple[TokenCap, ...], now: datetime) -> None:
    """Raise 429 when the user's usage plus what their requests in progress reserve in any
    capped window reached its cap."""
    if not caps:
        return
    used, held = usage_and_reserved(user_id, {cap.window: cap.seconds for cap in caps}, now)
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


def usage_in_windows(
    user_id: str, windows: dict[str, int], now: datetime
) -> dict[str, tuple[int, int]]:
    """Tokens and micro-USD billed to the user in each named window (length in seconds)."""
    return usage_and_reserved(user_id, windows, now)[0]


def usage_and_reserved(
    user_id: str, windows: dict[str, int], now: datetime
) -> tuple[dict[str, tuple[int, int]], tuple[int, int]]:
    """Tokens and micro-USD billed to the user in each named window (length in seconds),
    and held by their calls in progress and their calls done whose work is not billed yet
    (expired reservations left out), at one moment: one statement, written out, because
    the ORM built its two aggregates in about 3 ms of CPU, twenty times what the database
    spends answering them."""
    adapt = connection.ops.adapt_datetimefield_value
    starts = [adapt(now - timedelta(seconds=seconds)) for seconds in windows.values()]
    oldest = adapt(now - timedelta(seconds=max(windows.values())))
    params = [user_id, adapt(now), *(start for start in starts for _ in range(2))]
    with connection.cursor() as cursor:
        cursor.execute(_usage_sql(connection.vendor, len(windows)), [*params, user_id, oldest])
        row = [int(value or 0) for value in cursor.fetchone()]
    billed = {
        window: (row[2 + 2 * index], row[3 + 2 * index]) for index, window in enumerate(windows)
    }
    return billed, (row[0], row[1])


@cache
def _usage_sql(vendor: str, windows: int) -> str:
    """The statement of ``usage_and_reserved`` for ``windows`` windows (parameters: the
    user id and now; each window's start, twice; the user id and the oldest start)."""
    reservations = connection.ops.quote_name(BudgetReservation._meta.db_table)
    ledger = connection.ops.quote_name(LedgerEntry._meta.db_table)
    sums = ", ".join(
        f"SUM(CASE WHEN created_at > %s THEN total_tokens END) AS tokens_{index}, "
        f"SUM(CASE WHEN created_at > %s THEN cost_micro_usd END) AS spent_{index}"
        for index in range(windows)
    )
    columns = ", ".join(f"billed.tokens_{index}, billed.spent_{index}" for index in range(windows))
    return (
        f"SELECT held.tokens, held.spent, {columns} FROM "
        f"(SELECT SUM(tokens) AS tokens, SUM(micro_usd) AS spent FROM {reservations} "
        "WHERE user_id = %s AND expires_at > %s) AS held, "
        f"(SELECT {sums} FROM {ledger} "
        "WHERE user_id = %s AND kind = 'turn' AND created_at > %s) AS billed"
    )


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
