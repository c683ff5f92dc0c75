"""Per-user budgets over rolling windows of the ledger, in tokens or in USD: the caps a
client declares in ``metadata`` and the operator's ``budgets:`` (docs/api.md, "Token
budgets"; docs/cost-and-keys.md).

A capped request is admitted only while the user's usage plus what their requests in
progress reserve is under every cap; admitting it reserves its own tokens in
the same transaction, under a per-user lock (PostgreSQL: an advisory transaction lock;
SQLite: the write lock its IMMEDIATE transactions take), so concurrent requests in any
number of processes overshoot a cap by at most one request. The request's ledger row
replaces the reservation when the call ends (``inference.turn.recording``).

These functions are synchronous ORM code: the pipeline runs them inside the one
worker-thread call it makes before contacting the provider.
"""

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db import connection, transaction
from django.db.models import Q, Sum

from agents.schema import BudgetsConfig
from inference.errors import ApiError
from inference.ledger.keys import KeyGrant, check_key
from inference.models import BudgetReservation, LedgerEntry

# A reservation a crashed process never settled stops counting after this long.
RESERVATION_TTL = timedelta(minutes=15)
# Reserved for the reply when the request sets no max_tokens.
DEFAULT_COMPLETION_TOKENS = 1024
MAX_RESERVATION = 10**15

# The metadata keys of the caps a client may declare, and their rolling windows.
WINDOWS: dict[str, tuple[str, int]] = {
    "tokens_per_hour": ("hour", 3600),
    "tokens_per_day": ("day", 86400),
    "tokens_per_month": ("month", 30 * 86400),
}


@dataclass(frozen=True)
class TokenCap:
    window: str  # "hour", "day" or "month"
    seconds: int
    cap: int  # tokens, or micro-USD for a USD cap
    usd: bool = False  # a cap on cost rather than tokens
    param: str = ""  # what set it, for the refusal (default: the metadata key)

    @property
    def source(self) -> str:
        unit = "usd" if self.usd else "tokens"
        return self.param or f"metadata.{unit}_per_{self.window}"

    def amount(self, tokens: int, micro_usd: int) -> int:
        return micro_usd if self.usd else tokens

    def shown(self, value: int) -> str:
        """A tokens figure as a number, a USD one as dollars."""
        return f"${value / 1e6:.6f}" if self.usd else str(value)

    def used(self, value: int) -> str:
        return f"{self.shown(value)} {'spent' if self.usd else 'tokens used'}"


def operator_caps(budgets: BudgetsConfig, user_id: str) -> tuple[TokenCap, ...]:
    """The caps ``budgets:`` sets for the user: their entry's keys, the rest from
    ``default``."""
    own = budgets.users.get(user_id)
    if own is None and not budgets.default.model_fields_set:
        return ()
    caps = []
    for unit in ("tokens", "usd"):
        for window, seconds in (("hour", 3600), ("day", 86400), ("month", 30 * 86400)):
            key = f"{unit}_per_{window}"
            if own is not None and key in own.model_fields_set:
                value, param = getattr(own, key), f"budgets.users.{user_id}.{key}"
            else:
                value, param = getattr(budgets.default, key), f"budgets.default.{key}"
            if value is None:
                continue
            cap = round(value * 1_000_000) if unit == "usd" else int(value)
            caps.append(TokenCap(window, seconds, cap, usd=unit == "usd", param=param))
    return tuple(caps)


def reservation_size(prompt_tokens: int, max_tokens: int | None) -> int:
    """Estimated prompt tokens plus the most the reply may spend."""
    completion = DEFAULT_COMPLETION_TOKENS if max_tokens is None else max(0, max_tokens)
    return min(MAX_RESERVATION, prompt_tokens + completion)


def reserve(
    user_id: str,
    caps: tuple[TokenCap, ...],
    tokens: int,
    now: datetime,
    key: KeyGrant | None = None,
    micro_usd: int = 0,
) -> int | None:
    """Check the caps and the API key's limits (429) and reserve ``tokens`` (and
    ``micro_usd``, the estimated cost) for the request, in one transaction. The
    reservation's id, or None when nothing limits the request (nothing to hold)."""
    limited_key = key if key is not None and key.limited else None
    if not caps and limited_key is None:
        return None
    with transaction.atomic():
        lock_until_commit(f"budget:{user_id}")
        if limited_key is not None:
            lock_until_commit(f"key:{limited_key.id}")
        BudgetReservation.objects.filter(user_id=user_id, expires_at__lte=now).delete()
        check_budgets(user_id, caps, now)
        if limited_key is not None:
            check_key(limited_key, tokens, now)
        reservation = BudgetReservation.objects.create(
            user_id=user_id,
            tokens=tokens,
            micro_usd=micro_usd,
            api_key_id=limited_key.id if limited_key is not None else None,
            expires_at=now + RESERVATION_TTL,
        )
    return reservation.id


def release(reservation: int) -> None:
    """Drop a reservation whose request ended without a ledger row."""
    BudgetReservation.objects.filter(id=reservation).delete()


def lock_until_commit(name: str) -> None:
    """Serialize the transactions that take the lock ``name`` (a user's or a key's budget
    checks, a user's memory writes) across processes until the transaction ends."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute("SELECT pg_advisory_xact_lock(hashtextextended(%s, 0))", [name])
    # SQLite: the transaction began IMMEDIATE (settings), holding the database's write lock.


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
        if spent >= cap.cap:
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
        raise _refusal(cap, f"{detail} (rolling {cap.seconds} s)", wait)


def _refusal(cap: TokenCap, detail: str, wait: int) -> ApiError:
    code = "insufficient_quota" if cap.usd else "rate_limit_exceeded"
    return ApiError(
        429,
        f"{'Spend' if cap.usd else 'Token'} budget exhausted: {detail} against a cap of "
        f"{cap.shown(cap.cap)}; retry in {wait} s",
        code=code,
        error_type=code,
        param=cap.source,
        headers={"Retry-After": str(wait)},
    )


def reserved(user_id: str, now: datetime, excluding: int | None = None) -> tuple[int, int]:
    """Tokens and micro-USD held by the user's requests in progress (expired reservations
    left out, and the reservation ``excluding``)."""
    live = BudgetReservation.objects.filter(user_id=user_id, expires_at__gt=now)
    if excluding is not None:
        live = live.exclude(id=excluding)
    totals = live.aggregate(tokens=Sum("tokens"), micro_usd=Sum("micro_usd"))
    return totals["tokens"] or 0, totals["micro_usd"] or 0


def admit_within_turn(
    user_id: str,
    caps: tuple[TokenCap, ...],
    reservation: int | None,
    spent: tuple[int, int],
    now: datetime,
) -> None:
    """Raise 429 when what a turn has spent so far (tokens, micro-USD), with the user's
    billed usage and what their other requests reserve, reached a cap: the turn makes no
    further call. (The turn's own reservation stands for the whole turn and is not
    counted beside it.)"""
    others = reserved(user_id, now, excluding=reservation)  # first, as above
    used = usage_in_windows(user_id, {cap.window: cap.seconds for cap in caps}, now)
    for cap in caps:
        before = cap.amount(*used[cap.window])
        if before + cap.amount(*others) + cap.amount(*spent) < cap.cap:
            continue
        # Usage alone over the cap waits for it to age out; otherwise for requests to end.
        wait = retry_after(user_id, cap, before, now) if before >= cap.cap else 1
        detail = (
            f"during the turn: {cap.shown(cap.amount(*spent))} spent by it, "
            f"{cap.shown(before)} before it in the last {cap.window} and "
            f"{cap.shown(cap.amount(*others))} reserved by other requests (rolling {cap.seconds} s)"
        )
        raise _refusal(cap, detail, wait)


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
    if cap.cap == 0:
        return cap.seconds
    start = now - timedelta(seconds=cap.seconds)
    counted = "cost_micro_usd" if cap.usd else "total_tokens"
    entries = (
        LedgerEntry.objects.filter(user_id=user_id, kind="turn", created_at__gt=start)
        .order_by("created_at")
        .values_list("created_at", counted)
    )
    remaining = used
    for created_at, amount in entries.iterator():
        remaining -= int(amount or 0)
        if remaining < cap.cap:
            leaves_at: datetime = created_at + timedelta(seconds=cap.seconds)
            return max(1, math.ceil((leaves_at - now).total_seconds()))
    return cap.seconds
