"""The right to erasure (docs/memory.md): everything stored about a user removed in one
transaction: conversation history, memories, stored responses, pending tool exchanges
and budget reservations. What must be kept for the operator's accounts (ledger rows,
judge scores, request records) stays, under a digest instead of the user id, so totals
still add up and nothing leads back to the person."""

import hashlib

from django.db import transaction

from inference.models import (
    BudgetReservation,
    JudgeRun,
    JudgeScore,
    LedgerEntry,
    Memory,
    RequestRecord,
    StoredMessage,
    StoredResponse,
    ToolExchange,
)


def erased_id(user_id: str) -> str:
    """What a user's id becomes in the rows kept for accounting."""
    return f"erased-{hashlib.sha256(user_id.encode()).hexdigest()[:24]}"


def erase_user(user_id: str) -> dict[str, int]:
    """Remove what is stored about ``user_id``; the counts of what was removed."""
    with transaction.atomic():
        history = StoredMessage.objects.filter(user_id=user_id)
        conversations = history.values("model").distinct().count()
        messages, _ = history.delete()
        memories, _ = Memory.objects.filter(user_id=user_id).delete()
        responses, _ = StoredResponse.objects.filter(user_id=user_id).delete()
        ToolExchange.objects.filter(user_id=user_id).delete()
        BudgetReservation.objects.filter(user_id=user_id).delete()
        digest = erased_id(user_id)
        for kept in (LedgerEntry, JudgeRun, JudgeScore, RequestRecord):
            kept.objects.filter(user_id=user_id).update(user_id=digest)
    return {
        "conversations": conversations,
        "messages": messages,
        "memories": memories,
        "responses": responses,
    }
