"""The Batch API's shapes: the request to create one, the batch object, a page of them."""

from collections import Counter
from datetime import datetime
from typing import Any

from inference.models import Batch
from inference.neutral.body import Lenient


class BatchIn(Lenient):
    input_file_id: str
    endpoint: str
    completion_window: str
    metadata: dict[str, str] | None = None


def batch_object(batch: Batch, counts: Counter[str]) -> dict[str, Any]:
    """``counts``: the batch's lines by status. ``failed`` counts every line of the error
    file: those that failed, and those a cancel or the window's end kept from running."""
    ended = counts["succeeded"] + counts["failed"] + counts["cancelled"] + counts["expired"]
    errors = None
    if batch.errors:
        errors = {"object": "list", "data": batch.errors}
    return {
        "id": batch.id,
        "object": "batch",
        "endpoint": batch.endpoint,
        "errors": errors,
        "input_file_id": batch.input_file_id,
        "completion_window": batch.completion_window,
        "status": batch.status,
        "output_file_id": batch.output_file_id or None,
        "error_file_id": batch.error_file_id or None,
        "created_at": _epoch(batch.created_at),
        "in_progress_at": _epoch(batch.in_progress_at),
        "expires_at": _epoch(batch.expires_at),
        "finalizing_at": _epoch(batch.finalizing_at),
        "completed_at": _epoch(batch.completed_at),
        "failed_at": _epoch(batch.failed_at),
        "expired_at": _epoch(batch.expired_at),
        "cancelling_at": _epoch(batch.cancelling_at),
        "cancelled_at": _epoch(batch.cancelled_at),
        "request_counts": {
            "total": sum(counts.values()),
            "completed": counts["succeeded"],
            "failed": ended - counts["succeeded"],
        },
        "metadata": batch.metadata,
    }


def batch_list(
    batches: list[Batch], counts: dict[str, Counter[str]], has_more: bool
) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [batch_object(batch, counts[batch.id]) for batch in batches],
        "first_id": batches[0].id if batches else None,
        "last_id": batches[-1].id if batches else None,
        "has_more": has_more,
    }


def _epoch(moment: datetime | None) -> int | None:
    return int(moment.timestamp()) if moment is not None else None
