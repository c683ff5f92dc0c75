"""What a turn leaves in the database: its charge (every round, repair and subagent call
summed, settled by ``inference.money.settlement``; a turn the response cache answered
wholly is a ``cache_hit``, a request that spent nothing), the exchange in the user's
history when the turn produced an answer, and the gateway's half of a tool round that
ended at client calls.

Turns that end together are written together, in the writer's transaction
(``inference.ledger.writer``), so each turn's ledger row and the settling of its
reservations commit at once.
"""

from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from inference.erasures import erasures_of
from inference.ledger.history import history_rows, store_history
from inference.models import ToolExchange
from inference.money.settlement import Charge, ChargeKind, charge, settle
from inference.neutral.calls import Answerer
from inference.neutral.types import ToolCall, Usage
from inference.tools.exchanges import tool_exchange_rows
from inference.tools.loop import Exchange
from inference.turn.preparation import Turn


@dataclass(frozen=True)
class TurnRecord:
    """A turn's bill, and ``reply`` to remember in history (None: nothing to remember)."""

    turn: Turn
    usage: Usage
    reply: str | None
    exchange: Exchange | None
    client_calls: tuple[ToolCall, ...]
    now: datetime
    upstream: Answerer | None = None  # what answered the final model call
    attempts: int = 0  # upstream attempts of the turn, retries and fallbacks included
    reservations: tuple[int, ...] = ()  # of its calls: the ledger row replaces them
    hits: int = 0  # its calls the response cache answered
    hits_shown: Usage = field(default_factory=Usage)  # their tokens as first paid, at no cost
    saved_micro_usd: int = 0  # what they first cost
    kept: bool = False  # whether the cache kept one of its replies

    @property
    def read_by_later_requests(self) -> bool:
        """Whether the user's next request may read what this record writes, so the reply
        must wait for its commit: history to replay, the gateway's half of a tool round,
        a reply the cache kept (queued before this record, committed with it at the
        latest), or the ledger row that replaces budget reservations (a reservation is an
        estimate; the next budget check must see the real count). A turn without limits
        does not wait for its ledger row: a capped request the user sends the moment it
        is answered may be checked before that row is in (commits take milliseconds)."""
        remembered = self.reply is not None and self.turn.remembers
        return remembered or self.kept or self.exchange is not None or bool(self.reservations)


def record_turns(records: Sequence[TurnRecord]) -> None:
    """Write ``records`` (the writer holds the transaction). A turn whose user was erased
    while it ran is billed under the digest and leaves nothing else."""
    erasures = erasures_of({record.turn.user_id for record in records})
    settle([_charge(record) for record in records], erasures)
    records = [
        record
        for record in records
        if not erasures.since(record.turn.user_id, record.turn.started_at)
    ]
    history = [
        row
        for record in records
        if record.reply is not None and record.turn.remembers
        for row in history_rows(
            record.turn.user_id,
            record.turn.requested_model,
            record.turn.user_text,
            record.reply,
        )
    ]
    if history:
        store_history(history)
    exchanges = [
        row
        for record in records
        if record.exchange is not None
        for row in tool_exchange_rows(
            record.turn.user_id, [call.id for call in record.client_calls], record.exchange
        )
    ]
    if exchanges:
        ToolExchange.objects.bulk_create(exchanges)


def _charge(record: TurnRecord) -> Charge:
    """The turn's row: what it spent upstream, and what the cache saved it; a turn of
    hits alone is a ``cache_hit`` (the hits' tokens, at no cost)."""
    turn, usage = record.turn, record.usage
    kind: ChargeKind | None = None
    if record.hits and not record.attempts:
        kind, usage = "cache_hit", record.hits_shown
    return charge(
        turn.caller,
        usage,
        agent=turn.agent.name,
        call_id=turn.completion_id,
        answered_by=record.upstream or Answerer(turn.agent.provider, turn.agent.model),
        attempts=record.attempts,
        experiment=turn.routing.experiment,
        variant=turn.routing.variant,
        reservations=record.reservations,
        saved_micro_usd=record.saved_micro_usd,
        kind=kind,
        created_at=record.now,
    )
