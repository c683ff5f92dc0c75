"""Batches and their lines in the database; every function runs on a database thread
(``in_database``).

A batch is run by one process at a time: a process takes a batch nobody runs (new, or
whose runner's heartbeat is older than the lease: that process died) by an update only
one process can win, and renews its heartbeat while it runs it. Each line is claimed
(``queued`` → ``sent``) before it is sent, and only while the batch is ``in_progress``
(a cancel stops new lines at once). A process taking over a batch fails the lines its
dead runner had claimed without ending them (``interrupted``) rather than sending them
again: no line is ever sent twice.
"""

from collections import Counter
from collections.abc import Sequence
from datetime import datetime, timedelta
from typing import Any, Literal

from django.db import transaction
from django.db.models import Count, Q, Sum

from inference.batches.lines import LineOutcome
from inference.batches.validation import Problem, Request
from inference.erasures import erasures_of
from inference.models import Batch, BatchLine, StoredFile

# Lines whose outcome is known, as the error file and the counts name them.
ENDED = ("succeeded", "failed", "cancelled", "expired")
RUNNING = ("in_progress", "cancelling", "finalizing")
INTERRUPTED = "the gateway stopped while the line was in flight; it is not sent again"
# Which API a batch was created with (its shapes; ids of one are unknown to the other).
type BatchApi = Literal["openai", "anthropic"]


def create_batch(batch: Batch, requests: Sequence[Request], problems: Sequence[Problem]) -> None:
    """Keep ``batch`` with its lines, or as ``failed`` with ``problems`` and no line."""
    now = batch.created_at
    if problems:
        batch.status, batch.failed_at = "failed", now
        batch.errors = [problem.as_json() for problem in problems]
    else:
        batch.status, batch.in_progress_at = "in_progress", now
    with transaction.atomic():
        batch.save(force_insert=True)
        if not problems:
            BatchLine.objects.bulk_create(
                (
                    BatchLine(batch=batch, number=r.number, custom_id=r.custom_id, body=r.body)
                    for r in requests
                ),
                batch_size=500,
            )


def batch_of(user_id: str, batch_id: str, dialect: BatchApi) -> Batch | None:
    return Batch.objects.filter(id=batch_id, user_id=user_id, dialect=dialect).first()


def page_of_batches(
    user_id: str, dialect: BatchApi, limit: int, after: str | None, before: str | None = None
) -> tuple[list[Batch], bool]:
    """The user's batches, newest first, after the batch ``after`` (or before ``before``:
    newer ones); whether more follow."""
    rows = Batch.objects.filter(user_id=user_id, dialect=dialect)
    if after is not None and (cursor := rows.filter(id=after).first()) is not None:
        rows = rows.filter(created_at__lte=cursor.created_at).exclude(
            created_at=cursor.created_at, id__gte=cursor.id
        )
    if before is not None and (cursor := rows.filter(id=before).first()) is not None:
        rows = rows.filter(created_at__gte=cursor.created_at).exclude(
            created_at=cursor.created_at, id__lte=cursor.id
        )
    found = list(rows.order_by("-created_at", "-id")[: limit + 1])
    return found[:limit], len(found) > limit


def line_counts(batch_ids: Sequence[str]) -> dict[str, Counter[str]]:
    """How many lines of each batch are in each status, in one query."""
    counts: dict[str, Counter[str]] = {batch_id: Counter() for batch_id in batch_ids}
    rows = (
        BatchLine.objects.filter(batch_id__in=list(batch_ids))
        .values("batch_id", "status")
        .annotate(n=Count("id"))
    )
    for row in rows:
        counts[row["batch_id"]][row["status"]] = row["n"]
    return counts


def costs_of(batch_ids: Sequence[str]) -> dict[str, int]:
    """What each batch's lines cost so far, in micro-USD."""
    rows = (
        BatchLine.objects.filter(batch_id__in=list(batch_ids))
        .values("batch_id")
        .annotate(cost=Sum("cost_micro_usd"))
    )
    return {row["batch_id"]: row["cost"] or 0 for row in rows}


def cancel_batch(user_id: str, batch_id: str, dialect: BatchApi, now: datetime) -> Batch | None:
    """The batch, ``cancelling`` unless it had ended (its runner ends it ``cancelled``
    once its lines in flight are done)."""
    with transaction.atomic():
        Batch.objects.filter(
            id=batch_id, user_id=user_id, dialect=dialect, status__in=("validating", "in_progress")
        ).update(status="cancelling", cancelling_at=now)
        return batch_of(user_id, batch_id, dialect)


def take_batches(limit: int, now: datetime, lease: float) -> list[Batch]:
    """Up to ``limit`` running batches this process now runs: new ones, and those whose
    runner stopped renewing them (their claimed lines fail as ``interrupted``)."""
    stale = now - timedelta(seconds=lease)
    waiting = Batch.objects.filter(
        Q(heartbeat_at__isnull=True) | Q(heartbeat_at__lt=stale), status__in=RUNNING
    ).order_by("created_at")[: limit * 2]
    taken: list[Batch] = []
    for batch in waiting:
        won = Batch.objects.filter(id=batch.id, heartbeat_at=batch.heartbeat_at).update(
            heartbeat_at=now
        )
        if not won:
            continue
        if batch.heartbeat_at is not None:
            BatchLine.objects.filter(batch_id=batch.id, status="sent").update(
                status="failed",
                error_code="interrupted",
                error_message=INTERRUPTED,
                finished_at=now,
            )
        batch.heartbeat_at = now
        taken.append(batch)
        if len(taken) == limit:
            break
    return taken


def renew(batch_ids: Sequence[str], now: datetime) -> None:
    Batch.objects.filter(id__in=list(batch_ids)).update(heartbeat_at=now)


def state_of(batch_id: str) -> tuple[str, datetime] | None:
    """The batch's status and when its window ends (None: it was erased)."""
    return Batch.objects.filter(id=batch_id).values_list("status", "expires_at").first()


def claim_lines(batch_id: str, limit: int) -> list[BatchLine]:
    """Up to ``limit`` of the batch's queued lines, claimed (``sent``) in its order, while
    the batch is ``in_progress``."""
    ids = list(
        BatchLine.objects.filter(batch_id=batch_id, status="queued")
        .order_by("number")
        .values_list("id", flat=True)[:limit]
    )
    if not ids:
        return []
    with transaction.atomic():
        if not Batch.objects.filter(id=batch_id, status="in_progress").exists():
            return []
        BatchLine.objects.filter(id__in=ids, status="queued").update(status="sent")
    return list(BatchLine.objects.filter(id__in=ids, status="sent").order_by("number"))


def queued_lines(batch_id: str) -> list[BatchLine]:
    return list(BatchLine.objects.filter(batch_id=batch_id, status="queued").order_by("number"))


def claim_native(batch_id: str, providers: dict[int, str]) -> list[BatchLine]:
    """The queued lines of ``providers`` (line id → the provider whose batch it joins)
    claimed for native mode, while the batch is ``in_progress``."""
    by_provider: dict[str, list[int]] = {}
    for line_id, provider in providers.items():
        by_provider.setdefault(provider, []).append(line_id)
    with transaction.atomic():
        if not Batch.objects.filter(id=batch_id, status="in_progress").exists():
            return []
        for provider, ids in by_provider.items():
            BatchLine.objects.filter(id__in=ids, status="queued").update(
                status="sent", native_provider=provider
            )
    return list(
        BatchLine.objects.filter(id__in=list(providers), status="sent", native_batch="").order_by(
            "number"
        )
    )


def in_provider_batch(line_ids: Sequence[int], native_batch: str) -> None:
    """The lines are in the provider batch ``native_batch``: polled, never sent again."""
    BatchLine.objects.filter(id__in=list(line_ids), status="sent").update(
        status="upstream", native_batch=native_batch
    )


def upstream_lines(batch_id: str) -> list[BatchLine]:
    """The lines in provider batches not yet read (a process that stopped polled them)."""
    return list(BatchLine.objects.filter(batch_id=batch_id, status="upstream").order_by("number"))


def end_unrun(line_id: int, status: Literal["cancelled", "expired"], now: datetime) -> None:
    """A line its provider batch never ran (cancelled or expired first)."""
    BatchLine.objects.filter(id=line_id).update(status=status, finished_at=now)


def finish_line(line_id: int, outcome: LineOutcome, now: datetime) -> None:
    BatchLine.objects.filter(id=line_id).update(
        status="succeeded" if outcome.succeeded else "failed",
        status_code=outcome.status_code,
        response=outcome.body,
        request_id=outcome.request_id,
        error_code=outcome.error_code,
        error_message=outcome.error_message[:2000],
        cost_micro_usd=outcome.cost_micro_usd,
        finished_at=now,
    )


def unclaim(line_id: int) -> None:
    """Give back a claimed line that was never sent (it waited on a rate limit while its
    batch was cancelled or expired): it ends with the batch's other unsent lines."""
    BatchLine.objects.filter(id=line_id, status="sent").update(status="queued")


def has_unsent(batch_id: str) -> bool:
    return BatchLine.objects.filter(batch_id=batch_id, status="queued").exists()


def end_unsent(batch_id: str, status: Literal["cancelled", "expired"], now: datetime) -> None:
    """The lines never sent end as ``status``."""
    BatchLine.objects.filter(batch_id=batch_id, status="queued").update(
        status=status, finished_at=now
    )


def finalizing(batch_id: str, now: datetime) -> None:
    Batch.objects.filter(id=batch_id, status="in_progress").update(
        status="finalizing", finalizing_at=now
    )


def ended_lines(batch_id: str) -> list[BatchLine]:
    return list(BatchLine.objects.filter(batch_id=batch_id, status__in=ENDED).order_by("number"))


def end_batch(
    batch_id: str,
    status: str,
    now: datetime,
    output: StoredFile | None,
    errors: StoredFile | None,
    started: datetime,
) -> None:
    """The batch ended as ``status``, with its output and error files (kept unless its
    user was erased since the batch began)."""
    fields: dict[str, Any] = {"status": status, f"{status}_at": now}
    with transaction.atomic():
        user_id = Batch.objects.filter(id=batch_id).values_list("user_id", flat=True).first()
        if user_id is None or erasures_of([user_id]).since(user_id, started):
            return
        for file, field in ((output, "output_file_id"), (errors, "error_file_id")):
            if file is not None:
                file.save(force_insert=True)
                fields[field] = file.id
        Batch.objects.filter(id=batch_id).update(**fields)


def batches_before(user_id: str | None, after: str | None, limit: int) -> list[Batch]:
    """Every user's batches, newest first (the admin), after the batch ``after``."""
    rows = Batch.objects.all()
    if user_id:
        rows = rows.filter(user_id=user_id)
    if after is not None and (cursor := Batch.objects.filter(id=after).first()) is not None:
        rows = rows.filter(created_at__lte=cursor.created_at).exclude(
            created_at=cursor.created_at, id__gte=cursor.id
        )
    return list(rows.order_by("-created_at", "-id")[:limit])
