"""What a turn leaves in the database: its charge (every round, repair and subagent call
summed, settled by ``inference.money.settlement``; a turn the response cache answered
wholly is a ``cache_hit``, a request that spent nothing), the exchange in the user's
history when the turn produced an answer, the gateway's half of a tool round that ended
at client calls, and the replies the cache keeps (with the hits it served).

Turns that end together are written together, in the writer's transaction
(``inference.ledger.writer``), so each turn's ledger row and the settling of its
reservation commit at once.
"""

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import datetime

from inference.cache.store import write as write_entries
from inference.cache.use import TurnCache
from inference.erasures import erasures_of
from inference.ledger.history import history_rows, store_history
from inference.models import ToolExchange
from inference.money.settlement import Charge, ChargeKind, settle
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
    cache: TurnCache | None = None  # what the turn's cached calls did

    @property
    def read_by_later_requests(self) -> bool:
        """Whether the user's next request may read what this record writes, so the reply
        must wait for its commit: history to replay, the gateway's half of a tool round,
        or the ledger row that replaces a budget reservation (a reservation is an
        estimate; the next budget check must see the real count). A turn without caps
        does not wait for its ledger row: a capped request the user sends the moment it
        is answered may be checked before that row is in (commits take milliseconds)."""
        remembered = self.reply is not None and self.turn.remembers
        kept = self.cache is not None and bool(self.cache.stored)
        return remembered or kept or self.exchange is not None or self.turn.reservation is not None


def record_turns(records: Sequence[TurnRecord]) -> None:
    """Write ``records`` (the writer holds the transaction). A turn whose user was erased
    while it ran is billed under the digest and leaves nothing else."""
    erasures = erasures_of({record.turn.user_id for record in records})
    charges = [_charge(record) for record in records]
    charges += [
        replace(charge, started_at=record.turn.started_at)
        for record in records
        if record.cache is not None
        for charge in record.cache.charges
    ]
    settle(charges, erasures)
    records = [
        record
        for record in records
        if not erasures.since(record.turn.user_id, record.turn.started_at)
    ]
    _keep_cache_entries(records, records[0].now if records else None)
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


def _keep_cache_entries(records: Sequence[TurnRecord], now: datetime | None) -> None:
    stored = [entry for record in records if record.cache for entry in record.cache.stored]
    used = [hit.key for record in records if record.cache for hit in record.cache.hits]
    if now is not None and (stored or used):
        write_entries(stored, used, now)


def _charge(record: TurnRecord) -> Charge:
    """The turn's row: what it spent upstream, and what the cache saved it; a turn of
    hits alone is a ``cache_hit`` (the hits' tokens, at no cost)."""
    turn, cache, usage = record.turn, record.cache, record.usage
    kind: ChargeKind = "turn"
    saved = 0
    if cache is not None and cache.hits:
        saved = cache.saved_micro_usd
        if not record.attempts:
            kind, usage = "cache_hit", cache.shown
    return Charge(
        kind=kind,
        user_id=turn.user_id,
        agent=turn.agent.name,
        call_id=turn.completion_id,
        usage=usage,
        saved_micro_usd=saved,
        answered_by=record.upstream or Answerer(turn.agent.provider, turn.agent.model),
        attempts=record.attempts,
        experiment=turn.routing.experiment,
        variant=turn.routing.variant,
        key_id=turn.key_id,
        reservation=turn.reservation,
        created_at=record.now,
        started_at=turn.started_at,
    )
