"""The right to erasure (docs/memory.md): everything stored about a user removed in one
transaction: conversation history, memories, stored responses, pending tool exchanges,
the response cache's answers to their requests, uploaded files (their bytes leave the
disk once the rest is committed), budget reservations, their MCP connections (the
tokens of their accounts at MCP servers), their batches and their turns in evaluations' cases. What must be kept for the operator's accounts (ledger rows,
judge scores, request records) stays, under a digest instead of the user id, so totals
still add up and nothing leads back to the person.

The erasure is recorded, so that work in flight for the user when it ran writes nothing
of theirs back (``inference.erasures``); on SQLite the write-ahead log is checkpointed
after it, and deleted rows are overwritten, so the erased text leaves the disk.
"""

import logging
from pathlib import Path

from django.db import connection, transaction
from django.utils import timezone

from inference.cache.forgetting import purge_entries
from inference.erasures import erased_id, record_erasure
from inference.files.storage import remove
from inference.models import (
    AgentTask,
    Batch,
    BudgetReservation,
    EvaluationCase,
    GuardrailEvent,
    JudgeRun,
    JudgeScore,
    LedgerEntry,
    McpConnection,
    Memory,
    RequestRecord,
    StoredFile,
    StoredMessage,
    StoredResponse,
    ToolExchange,
    TriggerRun,
)

logger = logging.getLogger("gateway.ledger")


def erase_user(user_id: str, files_folder: Path) -> dict[str, int]:
    """Remove what is stored about ``user_id``, the bytes of their files under
    ``files_folder`` included (once the rest is committed); the counts of what was
    removed."""
    sqlite = connection.vendor == "sqlite"
    if sqlite:
        _pragma("PRAGMA secure_delete = ON")
    try:
        with transaction.atomic():
            record_erasure(user_id, timezone.now())
            history = StoredMessage.objects.filter(user_id=user_id)
            conversations = history.values("model").distinct().count()
            messages, _ = history.delete()
            memories, _ = Memory.objects.filter(user_id=user_id).delete()
            responses, _ = StoredResponse.objects.filter(user_id=user_id).delete()
            ToolExchange.objects.filter(user_id=user_id).delete()
            purge_entries(None, user_id)
            uploaded = list(StoredFile.objects.filter(user_id=user_id).values_list("id", flat=True))
            StoredFile.objects.filter(id__in=uploaded).delete()
            BudgetReservation.objects.filter(user_id=user_id).delete()
            connections, _ = McpConnection.objects.filter(user_id=user_id).delete()
            EvaluationCase.objects.filter(user_id=user_id).delete()
            tasks, _ = AgentTask.objects.filter(user_id=user_id).delete()
            TriggerRun.objects.filter(user_id=user_id).delete()
            _, by_model = Batch.objects.filter(user_id=user_id).delete()
            batches = by_model.get(Batch._meta.label, 0)
            GuardrailEvent.objects.filter(user_id=user_id).delete()
            digest = erased_id(user_id)
            for kept in (LedgerEntry, JudgeRun, JudgeScore, RequestRecord):
                kept.objects.filter(user_id=user_id).update(user_id=digest)
    finally:
        if sqlite:
            _pragma("PRAGMA secure_delete = OFF")
    if sqlite:
        _checkpoint()
    remove(files_folder, uploaded)
    return {
        "conversations": conversations,
        "messages": messages,
        "memories": memories,
        "responses": responses,
        "files": len(uploaded),
        "mcp_connections": connections,
        "tasks": tasks,
        "batches": batches,
    }


def _pragma(statement: str) -> None:
    with connection.cursor() as cursor:
        cursor.execute(statement)


def _checkpoint() -> None:
    """Copy the log into the database file and empty it: until then the erased rows'
    pages, as they were, are still in the log."""
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        busy, _, _ = cursor.fetchone()
    if busy:
        logger.warning("the erasure's write-ahead log checkpoint was blocked by a reader")
