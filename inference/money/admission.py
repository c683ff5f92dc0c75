"""Admission: a request's caps and its API key's limits checked, and what it may spend
reserved, in one transaction (docs/api.md, "Token budgets"; docs/cost-and-keys.md).

A capped request is admitted only while the user's usage plus what their requests in
progress reserve is under every cap; admitting it reserves its own tokens (and estimated
cost) in the same transaction, under a per-user lock (PostgreSQL: an advisory
transaction lock; SQLite: the write lock its IMMEDIATE transactions take), and the
key's under a per-key lock, so concurrent requests in any number of processes overshoot
a cap by at most one request. The request's ledger row replaces the reservation when it
is settled (``inference.money.settlement``).

These functions are synchronous ORM code: the pipeline runs them inside the one
worker-thread call it makes before contacting the provider.
"""

import logging
from datetime import datetime, timedelta

from django.db import transaction

from inference.database import in_database, lock_until_commit
from inference.models import BudgetReservation
from inference.money.budgets import check_budgets, refusal, reserved, retry_after, usage_in_windows
from inference.money.caps import TokenCap
from inference.money.keys import KeyGrant, check_key
from inference.neutral.types import Usage

logger = logging.getLogger("gateway.money")
# A reservation a crashed process never settled stops counting after this long.
RESERVATION_TTL = timedelta(minutes=15)
# Reserved for the reply when the request sets no max_tokens.
DEFAULT_COMPLETION_TOKENS = 1024
MAX_RESERVATION = 10**15


def reservation_size(prompt_tokens: int, max_tokens: int | None) -> int:
    """Estimated prompt tokens plus the most the reply may spend."""
    return min(MAX_RESERVATION, estimated_usage(prompt_tokens, max_tokens).total_tokens)


def estimated_usage(prompt_tokens: int, max_tokens: int | None) -> Usage:
    """What a call is taken to spend before it says: its estimated prompt, and the most
    its reply may spend (``max_tokens``, or ``DEFAULT_COMPLETION_TOKENS``)."""
    completion = DEFAULT_COMPLETION_TOKENS if max_tokens is None else max(0, max_tokens)
    return Usage(prompt_tokens, min(MAX_RESERVATION, completion))


def admit(
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


async def release_quietly(reservation: int) -> None:
    """Give back a reservation that no ledger row will settle. A failure is logged, never
    raised over what the caller is handling: the reservation then expires on its own."""
    try:
        await in_database(release, reservation)
    except Exception:
        logger.exception("could not release budget reservation %s", reservation)


def admit_call(
    user_id: str,
    caps: tuple[TokenCap, ...],
    key: KeyGrant | None,
    reservation: int | None,
    spent: tuple[int, int],
    now: datetime,
) -> None:
    """Before each model call of a turn after its first: raise 429 when what the turn has
    spent so far (tokens, micro-USD), with the user's billed usage and what their other
    requests reserve, reached one of the user's caps, or with the key's own, the key's
    budget or tokens per minute, so the turn makes no further call. (The turn's own
    reservation stands for the whole turn and is not counted beside it.)"""
    if key is not None and key.limited:
        check_key(key, spent[0], now, spent_micro_usd=spent[1], excluding=reservation)
    if not caps:
        return
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
        raise refusal(cap, detail, wait)
