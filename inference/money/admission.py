"""Admission: before each model call, the caller's caps and its API key's limits checked
with everything in flight on the user and the key, and what the call may spend reserved,
in one transaction (docs/api.md, "Token budgets"; docs/cost-and-keys.md).

Every call a limited caller makes holds a reservation while it runs (its estimated
tokens and cost), and, once it is done, until its work's ledger row replaces it: a
finished call's reservation is set to what it really spent when its work's next call is
admitted. So admission sees every call in flight, in every turn of every process, at
its estimate, and the calls done but not yet billed at their cost. A call is admitted
while the user's usage plus what is reserved is under every cap (the key's likewise),
under a per-user lock (PostgreSQL: an advisory transaction lock; SQLite: the write
lock its IMMEDIATE transactions take) and a per-key one: any number of concurrent
calls overshoot a limit by at most one call.

These functions are synchronous ORM code, run in a worker thread (``in_database``).
"""

import logging
import uuid
from collections.abc import Sequence
from datetime import datetime, timedelta

from django.db import transaction

from inference.database import in_database, insert_rows, lock_until_commit
from inference.models import BudgetReservation
from inference.money.budgets import check_budgets
from inference.money.caller import Caller
from inference.money.keys import check_key, check_key_valid
from inference.money.settlement import charge, settle
from inference.neutral.types import Usage

logger = logging.getLogger("gateway.money")
# A reservation a crashed process never settled stops counting after this long.
RESERVATION_TTL = timedelta(minutes=15)
# Reserved for the reply when the request sets no max_tokens.
DEFAULT_COMPLETION_TOKENS = 1024
MAX_RESERVATION = 10**15


def estimated_usage(prompt_tokens: int, max_tokens: int | None) -> Usage:
    """What a call is taken to spend before it says: its estimated prompt, and the most
    its reply may spend (``max_tokens``, or ``DEFAULT_COMPLETION_TOKENS``)."""
    completion = DEFAULT_COMPLETION_TOKENS if max_tokens is None else max(0, max_tokens)
    return Usage(min(MAX_RESERVATION, prompt_tokens), min(MAX_RESERVATION, completion))


def admit(
    caller: Caller,
    estimate: Usage,
    now: datetime,
    *,
    request: bool,
    finished: Sequence[tuple[int, Usage]] = (),
) -> int | None:
    """Admit one model call of ``caller`` (429 when a limit is reached, 401 when its key is
    no longer valid) and reserve ``estimate`` for it; ``request``: the first call of a
    request, which counts for the key's requests per minute; ``finished``: the caller's
    earlier calls of the same work that have ended, with what they spent. The
    reservation's id, or None when nothing limits the caller (nothing to hold)."""
    key = caller.key
    limited_key = key if key is not None and key.limited and caller.limited else None
    if not caller.limited and not caller.rechecks_key:
        return None
    tokens = min(MAX_RESERVATION, estimate.total_tokens)
    with transaction.atomic():
        key_lock = [f"key:{limited_key.id}"] if limited_key is not None else []
        lock_until_commit(f"budget:{caller.user_id}", *key_lock)
        for held, spent in finished:
            BudgetReservation.objects.filter(id=held).update(
                tokens=spent.total_tokens, micro_usd=spent.cost_micro_usd or 0
            )
        if key is not None and caller.rechecks_key:
            check_key_valid(key.id, now)
        if not caller.limited:
            return None
        check_budgets(caller.user_id, caller.caps, now)
        if limited_key is not None:
            check_key(limited_key, tokens if request else 0, now, request=request)
        reservation = BudgetReservation(
            user_id=caller.user_id,
            tokens=tokens,
            micro_usd=estimate.cost_micro_usd or 0,
            api_key_id=limited_key.id if limited_key is not None else None,
            request=request,
            expires_at=now + RESERVATION_TTL,
        )
        insert_rows([reservation], ids=True)  # its SQL built once, not for every call
    return reservation.id


def release(reservations: Sequence[int]) -> None:
    """Drop reservations whose work ended without a ledger row."""
    BudgetReservation.objects.filter(id__in=list(reservations)).delete()


async def release_quietly(reservations: Sequence[int]) -> None:
    """Give back reservations that no ledger row will settle. A failure is logged, never
    raised over what the caller is handling: they then expire on their own."""
    if not reservations:
        return
    try:
        await in_database(release, reservations)
    except Exception:
        logger.exception("could not release budget reservations %s", list(reservations))


def admit_tool_call(caller: Caller, tool: str, now: datetime) -> None:
    """A call of one of the gateway's own MCP tools with a limited key: a request of the
    key's (429 past its requests per minute, or once its budget is spent), kept as a
    ledger row of kind "tool" in the same transaction, so that it counts for the next."""
    key = caller.key
    if key is None or not key.limited:
        return
    with transaction.atomic():
        lock_until_commit(f"key:{key.id}")
        check_key(key, 0, now, request=True)
        settle(
            [charge(caller, Usage(), agent=tool, call_id=f"tool-{uuid.uuid4().hex}", kind="tool")]
        )
