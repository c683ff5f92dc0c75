"""The numbers of reconciliation, pure: the days compared, and how far what the gateway
computed is from what the provider billed."""

from datetime import date, timedelta

_MICRO = 1_000_000


def window(today: date, days: int) -> tuple[date, date]:
    """The first and last UTC day of "the last ``days`` days", today included."""
    return today - timedelta(days=days - 1), today


def drift_micro(billed: int, computed: int) -> int:
    """What the gateway computed beyond what the provider billed (negative: below)."""
    return computed - billed


def drift_pct(billed: int, computed: int) -> float | None:
    """The drift as a percentage of what was billed, to 2 decimals (10 % billed below what
    was computed: 11.11); None when nothing was billed."""
    if billed == 0:
        return None
    return round(drift_micro(billed, computed) / billed * 100, 2)


def flagged(pct: float | None, alert_pct: float) -> bool:
    """Whether a drift is over the alert threshold (a drift of nothing billed has no
    percentage, and is not)."""
    return pct is not None and abs(pct) > alert_pct


def usd(micro: int) -> float:
    return micro / _MICRO
