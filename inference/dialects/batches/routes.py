"""``/v1/batches`` (docs/batches.md): a user's batches, created from a file of purpose
``batch``, listed, read and cancelled. A batch is its creator's: another user's id is as
unknown."""

import asyncio

from django.http import HttpResponse
from django.utils import timezone

from inference.batches import records
from inference.batches.creation import start_batch
from inference.batches.validation import read_jsonl
from inference.database import in_database
from inference.dialects.batches.wire import BatchIn, batch_list, batch_object
from inference.files import storage
from inference.files.records import file_of
from inference.models import Batch
from inference.neutral.errors import ApiError, invalid_request
from inference.serving.batchline import BatchLines
from inference.serving.context import InferenceRequest
from inference.serving.owner import owner
from inference.serving.routes import dialect_api
from inference.serving.serve import json_response

api = dialect_api("batches", lambda path: "input_file_id, endpoint and completion_window")
MAX_PAGE = 100


def _lines_to(request: InferenceRequest, endpoint: str) -> BatchLines:
    """What answers a line to ``endpoint``, as the dialect owning that path declares it."""
    answering = request.runtime.openai_batch_lines
    lines = answering.get(endpoint)
    if lines is None:
        raise invalid_request(
            f"endpoint must be one of {', '.join(answering)}",
            param="endpoint",
            code="invalid_value",
        )
    return lines


@api.post("/v1/batches")
async def create_batch(request: InferenceRequest, payload: BatchIn) -> HttpResponse:
    config, user_id = owner(request)
    lines = _lines_to(request, payload.endpoint)
    if payload.completion_window != "24h":
        raise invalid_request(
            "completion_window must be 24h", param="completion_window", code="invalid_value"
        )
    row = await in_database(file_of, user_id, payload.input_file_id)
    if row is None or row.purpose != "batch":
        raise invalid_request(
            f"input_file_id: no file {payload.input_file_id} of purpose batch",
            param="input_file_id",
            code="invalid_value",
        )
    data = await asyncio.to_thread(storage.read, storage.folder_of(config), row.id)
    batch = await start_batch(
        read_jsonl(data),
        dialect="openai",
        endpoint=payload.endpoint,
        embedders=lines.embedders,
        user_id=user_id,
        key=request.api_key,
        config=config,
        engine=request.runtime.engine,
        input_file_id=row.id,
        metadata=payload.metadata,
    )
    return await _answer(batch)


@api.get("/v1/batches")
async def list_batches(
    request: InferenceRequest, limit: int = 20, after: str | None = None
) -> HttpResponse:
    _, user_id = owner(request)
    if not 1 <= limit <= MAX_PAGE:
        raise invalid_request(
            f"limit must be between 1 and {MAX_PAGE}", param="limit", code="invalid_value"
        )
    batches, has_more = await in_database(records.page_of_batches, user_id, "openai", limit, after)
    counts = await in_database(records.line_counts, [batch.id for batch in batches])
    return json_response(batch_list(batches, counts, has_more))


@api.get("/v1/batches/{batch_id}")
async def retrieve_batch(request: InferenceRequest, batch_id: str) -> HttpResponse:
    _, user_id = owner(request)
    return await _answer(
        _found(await in_database(records.batch_of, user_id, batch_id, "openai"), batch_id)
    )


@api.post("/v1/batches/{batch_id}/cancel")
async def cancel_batch(request: InferenceRequest, batch_id: str) -> HttpResponse:
    _, user_id = owner(request)
    cancelled = await in_database(records.cancel_batch, user_id, batch_id, "openai", timezone.now())
    request.runtime.engine.batches.queued()
    return await _answer(_found(cancelled, batch_id))


async def _answer(batch: Batch) -> HttpResponse:
    counts = await in_database(records.line_counts, [batch.id])
    return json_response(batch_object(batch, counts[batch.id]))


def _found(batch: Batch | None, batch_id: str) -> Batch:
    if batch is None:
        raise ApiError(404, f"No such batch: {batch_id}", param="batch_id", code="batch_not_found")
    return batch
