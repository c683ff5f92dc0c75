"""Per-user token budgets over rolling windows of the ledger (DESIGN 4.3).

These functions are synchronous ORM code: the pipeline runs them inside the one
worker-thread call it makes before contacting the provider.
"""

import math
from datetime import datetime, timedelta

from django.db.models import Q, Sum

from inference.errors import ApiError
from inference.models import LedgerEntry
from inference.options import TokenCap


def check_budgets(user_id: str, caps: tuple[TokenCap, ...], now: datetime) -> None:
    """Raise 429 when the user's usage in any capped window already reached its cap."""
    if not caps:
        return
    used = usage_in_windows(user_id, {cap.window: cap.seconds for cap in caps}, now)
    for cap in caps:
        if used[cap.window] >= cap.cap:
            wait = retry_after(user_id, cap, used[cap.window], now)
            raise ApiError(
                429,
                f"Token budget exhausted: {used[cap.window]} tokens used in the last {cap.window} "
                f"(rolling {cap.seconds} s) against a cap of {cap.cap}; retry in {wait} s",
                code="rate_limit_exceeded",
                param=f"metadata.tokens_per_{cap.window}",
                headers={"Retry-After": str(wait)},
            )


def usage_in_windows(user_id: str, windows: dict[str, int], now: datetime) -> dict[str, int]:
    """Tokens billed to the user in each named window (length in seconds), in one query."""
    sums = {
        window: Sum("total_tokens", filter=Q(created_at__gt=now - timedelta(seconds=seconds)))
        for window, seconds in windows.items()
    }
    oldest = now - timedelta(seconds=max(windows.values()))
    totals = LedgerEntry.objects.filter(user_id=user_id, created_at__gt=oldest).aggregate(**sums)
    return {window: totals[window] or 0 for window in windows}


def retry_after(user_id: str, cap: TokenCap, used: int, now: datetime) -> int:
    """Whole seconds until enough of the window's usage has aged out to fall below the cap."""
    if cap.cap == 0:
        return cap.seconds
    start = now - timedelta(seconds=cap.seconds)
    entries = (
        LedgerEntry.objects.filter(user_id=user_id, created_at__gt=start)
        .order_by("created_at")
        .values_list("created_at", "total_tokens")
    )
    remaining = used
    for created_at, tokens in entries.iterator():
        remaining -= tokens
        if remaining < cap.cap:
            leaves_at = created_at + timedelta(seconds=cap.seconds)
            return max(1, math.ceil((leaves_at - now).total_seconds()))
    return cap.seconds
