"""Settlement: every call the gateway pays for becomes a ledger row, whoever made it,
made here and nowhere else (``charge``: from what the calls spent and their caller).

The calls of work a caller pays for (a turn's every round, repair and subagent summed, a
task's, a ``/v1/embeddings`` call) are billed to its user and key (``kind`` "turn":
budgets and API keys count them) and replace the reservations their admission made;
judges, shadow variants, memory (extraction and recall) and the cache's lookups are
charged to the agent and experiment only, never to a user's or key's budget; an
evaluation's replays and judges (``evaluation``) are charged to an agent and no user.
``settle`` writes charges in the caller's transaction (the record writer's, or a
transaction of its own), so a row and the reservations it replaces go together.
"""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Literal, cast

from django.db.models import Q
from django.utils import timezone

from inference.database import insert_rows
from inference.erasures import Erasures, erasures_of
from inference.models import BudgetReservation, LedgerEntry
from inference.money.caller import TURN_PURPOSES, Caller, OwnPurpose
from inference.neutral.calls import Answerer
from inference.neutral.types import Usage

# "turn": billed to the user and key; "cache_hit": a turn answered wholly from the
# response cache (a request, nothing spent); "tool": a tool of the gateway's MCP server
# called by a key (a request, nothing spent); the others are charged to the agent (and
# experiment); "evaluation": a replay of recorded traffic and its judging, to no user at
# all; "smoke": a smoke test's conversation and judging.
type ChargeKind = Literal["turn", "cache_hit", "tool"] | OwnPurpose


@dataclass(frozen=True)
class Charge:
    """What one or more upstream calls cost, and who pays: one ledger row."""

    kind: ChargeKind
    user_id: str
    agent: str  # the agent (or embedder) that made the calls
    call_id: str  # the completion (or call) it belongs to
    usage: Usage  # priced (cost None: a call of it has no known price)
    answered_by: Answerer | None = None  # who answered (the last call)
    attempts: int = 1  # upstream attempts, retries and fallbacks included
    experiment: str = ""
    variant: str = ""
    key_id: int | None = None  # the minted API key that pays
    reservations: tuple[int, ...] = ()  # the budget reservations the row replaces
    created_at: datetime | None = None  # None: now
    # When the work it pays for began: a user erased since is billed under the digest.
    started_at: datetime | None = None
    saved_micro_usd: int = 0  # what the response cache saved it


def charge(
    caller: Caller,
    usage: Usage,
    *,
    agent: str,
    call_id: str,
    answered_by: Answerer | None = None,
    attempts: int = 1,
    experiment: str = "",
    variant: str = "",
    reservations: tuple[int, ...] = (),
    saved_micro_usd: int = 0,
    kind: ChargeKind | None = None,
    created_at: datetime | None = None,
) -> Charge:
    """The row of calls ``caller`` made for ``agent`` (``call_id``: the completion or call
    they belong to): of the kind its purpose says (or ``kind``), paid by its key when the
    caller pays for them."""
    purpose = caller.purpose
    kind = kind or ("turn" if purpose in TURN_PURPOSES else cast(OwnPurpose, purpose))
    return Charge(
        kind=kind,
        user_id="" if kind == "evaluation" else caller.user_id,  # to no user at all
        agent=agent,
        call_id=call_id,
        usage=usage,
        answered_by=answered_by,
        attempts=attempts,
        experiment=experiment,
        variant=variant,
        key_id=caller.key_id if caller.pays else None,
        reservations=reservations,
        created_at=created_at,
        started_at=caller.started_at,
        saved_micro_usd=saved_micro_usd,
    )


def settle(charges: Sequence[Charge], erasures: Erasures | None = None) -> None:
    """Write the charges' ledger rows and drop the reservations they replace, with any of
    their users' reservations that expired (left by a crashed process: no check counts
    them any more), in the same statement. ``erasures``: of the charges' users, when the
    caller has them already."""
    now = timezone.now()
    if erasures is None:
        erasures = erasures_of({charge.user_id for charge in charges if charge.started_at})
    insert_rows([_row(charge, now, erasures) for charge in charges])
    reservations = [id_ for charge in charges for id_ in charge.reservations]
    if reservations:
        holders = {charge.user_id for charge in charges if charge.reservations}
        expired = Q(user_id__in=holders, expires_at__lte=now)
        BudgetReservation.objects.filter(Q(id__in=reservations) | expired).delete()


def _row(charge: Charge, now: datetime, erasures: Erasures) -> LedgerEntry:
    usage = charge.usage
    started = charge.started_at
    return LedgerEntry(
        user_id=erasures.kept_id(charge.user_id, started) if started else charge.user_id,
        agent=charge.agent,
        experiment=charge.experiment,
        variant=charge.variant,
        provider=charge.answered_by.provider if charge.answered_by is not None else "",
        model=charge.answered_by.model if charge.answered_by is not None else "",
        attempts=charge.attempts,
        completion_id=charge.call_id,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        total_tokens=usage.total_tokens,
        cached_tokens=usage.cached_tokens or 0,
        cost_micro_usd=usage.cost_micro_usd,
        api_key_id=charge.key_id,
        kind=charge.kind,
        saved_micro_usd=charge.saved_micro_usd,
        created_at=charge.created_at or now,
    )
