"""``/v1/messages/batches`` (docs/batches.md): Anthropic's Message Batches over the same
batches as ``/v1/batches``, each request a ``/v1/messages`` request of the caller. A
list of requests that does not validate is refused (400 naming each bad request by its
index), as Anthropic refuses it."""

from django.http import HttpResponse
from django.utils import timezone

from inference.batches import records
from inference.batches.creation import start_batch
from inference.batches.results import anthropic_results
from inference.batches.validation import check_requests
from inference.database import in_database
from inference.dialects.messages.batch import PATH as MESSAGES
from inference.dialects.messages.batch_wire import MessageBatchIn, message_batch
from inference.dialects.messages.routes import api
from inference.models import Batch
from inference.neutral.errors import ApiError, invalid_request
from inference.serving.context import InferenceRequest
from inference.serving.owner import owner
from inference.serving.serve import json_response

PREFIX = "/v1/messages/batches"
MAX_PAGE = 1000


@api.post("/v1/messages/batches")
async def create_batch(request: InferenceRequest, payload: MessageBatchIn) -> HttpResponse:
    config, user_id = owner(request)
    lines = [
        (
            index + 1,
            {"custom_id": item.custom_id, "method": "POST", "url": MESSAGES, "body": item.params},
        )
        for index, item in enumerate(payload.requests)
    ]
    problems = check_requests(lines, MESSAGES, False, config).problems
    if problems:
        raise invalid_request(
            "; ".join(f"requests.{problem.line - 1}: {problem.message}" for problem in problems),
            param="requests",
        )
    batch = await start_batch(
        lines,
        dialect="anthropic",
        endpoint=MESSAGES,
        embedders=False,
        user_id=user_id,
        key=request.api_key,
        config=config,
        engine=request.runtime.engine,
    )
    return await _answer(request, batch)


@api.get("/v1/messages/batches")
async def list_batches(
    request: InferenceRequest,
    limit: int = 20,
    after_id: str | None = None,
    before_id: str | None = None,
) -> HttpResponse:
    _, user_id = owner(request)
    if not 1 <= limit <= MAX_PAGE:
        raise invalid_request(f"limit must be between 1 and {MAX_PAGE}", param="limit")
    batches, has_more = await in_database(
        records.page_of_batches, user_id, "anthropic", limit, after_id, before_id
    )
    counts = await in_database(records.line_counts, [batch.id for batch in batches])
    data = [
        message_batch(batch, counts[batch.id], _results_url(request, batch)) for batch in batches
    ]
    return json_response(
        {
            "data": data,
            "has_more": has_more,
            "first_id": batches[0].id if batches else None,
            "last_id": batches[-1].id if batches else None,
        }
    )


@api.get("/v1/messages/batches/{batch_id}")
async def retrieve_batch(request: InferenceRequest, batch_id: str) -> HttpResponse:
    return await _answer(request, await _found(request, batch_id))


@api.post("/v1/messages/batches/{batch_id}/cancel")
async def cancel_batch(request: InferenceRequest, batch_id: str) -> HttpResponse:
    _, user_id = owner(request)
    cancelled = await in_database(
        records.cancel_batch, user_id, batch_id, "anthropic", timezone.now()
    )
    request.runtime.engine.batches.queued()
    if cancelled is None:
        raise _not_found(batch_id)
    return await _answer(request, cancelled)


@api.get("/v1/messages/batches/{batch_id}/results")
async def batch_results(request: InferenceRequest, batch_id: str) -> HttpResponse:
    """The results of the requests that ended so far, in the batch's order."""
    batch = await _found(request, batch_id)
    lines = await in_database(records.ended_lines, batch.id)
    return HttpResponse(anthropic_results(lines), content_type="application/binary")


async def _found(request: InferenceRequest, batch_id: str) -> Batch:
    _, user_id = owner(request)
    batch = await in_database(records.batch_of, user_id, batch_id, "anthropic")
    if batch is None:
        raise _not_found(batch_id)
    return batch


async def _answer(request: InferenceRequest, batch: Batch) -> HttpResponse:
    counts = await in_database(records.line_counts, [batch.id])
    return json_response(message_batch(batch, counts[batch.id], _results_url(request, batch)))


def _results_url(request: InferenceRequest, batch: Batch) -> str:
    return request.build_absolute_uri(f"/v1/messages/batches/{batch.id}/results")


def _not_found(batch_id: str) -> ApiError:
    return ApiError(404, f"No such message batch: {batch_id}", code="not_found")
