"""The Message Batches shapes: the request to create one, the ``message_batch`` object, a
page of them."""

from collections import Counter
from datetime import datetime
from typing import Any

from inference.models import Batch
from inference.neutral.body import Lenient

# Anthropic's processing_status, by the batch's status.
_PROCESSING = {"cancelling": "canceling", "validating": "in_progress", "finalizing": "in_progress"}


class BatchRequestIn(Lenient):
    custom_id: Any = None
    params: Any = None


class MessageBatchIn(Lenient):
    requests: list[BatchRequestIn]


def message_batch(batch: Batch, counts: Counter[str], results_url: str) -> dict[str, Any]:
    status = batch.status
    processing = _PROCESSING.get(status, status if status == "in_progress" else "ended")
    ended_at = batch.completed_at or batch.cancelled_at or batch.expired_at or batch.failed_at
    return {
        "id": batch.id,
        "type": "message_batch",
        "processing_status": processing,
        "request_counts": {
            "processing": counts["queued"] + counts["sent"],
            "succeeded": counts["succeeded"],
            "errored": counts["failed"],
            "canceled": counts["cancelled"],
            "expired": counts["expired"],
        },
        "created_at": _rfc3339(batch.created_at),
        "expires_at": _rfc3339(batch.expires_at),
        "ended_at": _rfc3339(ended_at),
        "cancel_initiated_at": _rfc3339(batch.cancelling_at),
        "archived_at": None,
        "results_url": results_url if processing == "ended" else None,
    }


def _rfc3339(moment: datetime | None) -> str | None:
    return moment.isoformat().replace("+00:00", "Z") if moment is not None else None
