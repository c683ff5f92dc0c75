"""What a turn leaves in the database: one ledger row (every round, repair and subagent
call summed) that replaces the turn's budget reservation, the exchange in the user's
history when the turn produced an answer, and the gateway's half of a tool round that
ended at client calls. One transaction."""

from datetime import datetime

from django.db import transaction

from inference.exchanges import tool_exchange_rows
from inference.history import history_rows
from inference.models import BudgetReservation, LedgerEntry, StoredMessage, ToolExchange
from inference.providers.types import ToolCall, Usage
from inference.toolloop import Exchange
from inference.turn import Turn


def record_turn(
    turn: Turn,
    usage: Usage,
    reply: str | None,
    exchange: Exchange | None,
    client_calls: tuple[ToolCall, ...],
    now: datetime,
) -> None:
    """Bill the turn; remember ``reply`` in history (None: nothing to remember)."""
    with transaction.atomic():
        LedgerEntry.objects.create(
            user_id=turn.user_id,
            agent=turn.agent.name,
            experiment=turn.routing.experiment,
            variant=turn.routing.variant,
            provider=turn.agent.provider,
            completion_id=turn.completion_id,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            total_tokens=usage.total_tokens,
            created_at=now,
        )
        if turn.reservation is not None:
            BudgetReservation.objects.filter(id=turn.reservation).delete()
        if reply is not None and turn.remembers:
            StoredMessage.objects.bulk_create(
                history_rows(turn.user_id, turn.requested_model, turn.user_text, reply)
            )
        if exchange is not None:
            call_ids = [call.id for call in client_calls]
            ToolExchange.objects.bulk_create(tool_exchange_rows(turn.user_id, call_ids, exchange))
