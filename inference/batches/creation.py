"""A batch created for the caller of a request: its requests checked (a batch whose input
does not validate is kept as ``failed``, naming each bad line, and runs nothing), kept
with their lines, and the process's runner woken."""

import asyncio
import uuid
from collections.abc import Iterable
from datetime import timedelta
from typing import Any

from django.utils import timezone

from agents.schema import Config
from inference.batches.records import BatchApi, create_batch
from inference.batches.validation import check_requests
from inference.database import in_database
from inference.engine import Engine
from inference.models import Batch
from inference.money.keys import KeyGrant

WINDOW = timedelta(hours=24)  # completion_window "24h", the one OpenAI takes


async def start_batch(
    lines: Iterable[tuple[int, Any]],
    *,
    dialect: BatchApi,
    endpoint: str,
    embedders: bool,
    user_id: str,
    key: KeyGrant | None,
    config: Config,
    engine: Engine,
    input_file_id: str = "",
    metadata: dict[str, str] | None = None,
) -> Batch:
    """``lines``: each request with its 1-based line, as ``{custom_id, method, url,
    body}`` (parsed, or the ``ValueError`` of a line that is not JSON); ``embedders``:
    the endpoint's models are embedders."""
    checked = await asyncio.to_thread(check_requests, lines, endpoint, embedders, config)
    now = timezone.now()
    prefix = "msgbatch_" if dialect == "anthropic" else "batch_"
    batch = Batch(
        id=f"{prefix}{uuid.uuid4().hex[:24]}",
        user_id=user_id,
        api_key_id=key.id if key is not None else None,
        dialect=dialect,
        endpoint=endpoint,
        input_file_id=input_file_id,
        metadata=metadata,
        created_at=now,
        expires_at=now + WINDOW,
    )
    await in_database(create_batch, batch, checked.requests, checked.problems)
    if batch.status == "in_progress":
        engine.batches.queued()
    return batch
