"""The Responses API (docs/responses.md): ``POST /v1/responses`` over the same turn as
chat completions, and the routes of stored responses, each for its own user only."""

import logging
from collections.abc import Callable
from datetime import datetime
from typing import Any

from django.http import HttpResponse, HttpResponseBase
from django.utils import timezone

from inference.database import in_database
from inference.dialects.responses.body import ResponsesIn
from inference.dialects.responses.reader import ResponsesRequest, from_responses
from inference.dialects.responses.reply import Keep, ResponsesReply, echo
from inference.ledger.responses import (
    ResponseNotFound,
    conversation_before,
    delete_response,
    input_items_page,
    keep_response,
    stored_response,
)
from inference.neutral.errors import ApiError, invalid_request
from inference.neutral.request import Claims
from inference.serving.context import InferenceRequest, limits_of
from inference.serving.routes import dialect_api
from inference.serving.serve import json_response, serve
from inference.turn.identity import resolve_user_id
from inference.turn.preparation import live_config

logger = logging.getLogger("gateway.inference")
api = dialect_api("responses", lambda path: "model and input")
MAX_PAGE = 100


@api.post("/v1/responses")
async def create_response(request: InferenceRequest, payload: ResponsesIn) -> HttpResponseBase:
    started = timezone.now()
    claims = Claims(
        payload.safety_identifier,
        payload.user,
        request.headers.get("X-User-Id"),
        request.bound_user,
    )
    earlier = None
    user_id = ""
    if payload.previous_response_id is not None or payload.store is not False:
        user_id = _user(request, claims)
    if (previous := payload.previous_response_id) is not None:
        try:
            earlier = await in_database(conversation_before, user_id, previous, timezone.now())
        except ResponseNotFound:
            raise ApiError(
                404,
                f"Previous response with id '{previous}' not found",
                param="previous_response_id",
                code="previous_response_not_found",
            ) from None
    read = from_responses(
        payload, claims.header_user, claims.bound_user, earlier, limits_of(request).max_tools
    )
    keep = _keeper(user_id, read, previous, started) if payload.store is not False else None
    reply = ResponsesReply(echo(payload), read.namespaces, keep)
    return await serve(request, read.client, reply, id_prefix="resp_")


@api.get("/v1/responses/{response_id}")
async def retrieve_response(request: InferenceRequest, response_id: str) -> HttpResponse:
    user_id = _user(request, Claims(header_user=request.headers.get("X-User-Id")))
    stored = await _found(stored_response, user_id, response_id, timezone.now())
    return json_response(stored.response)


@api.delete("/v1/responses/{response_id}")
async def remove_response(request: InferenceRequest, response_id: str) -> HttpResponse:
    user_id = _user(request, Claims(header_user=request.headers.get("X-User-Id")))
    await _found(delete_response, user_id, response_id, timezone.now())
    return json_response({"id": response_id, "object": "response.deleted", "deleted": True})


@api.get("/v1/responses/{response_id}/input_items")
async def list_input_items(
    request: InferenceRequest,
    response_id: str,
    limit: int = 20,
    after: str | None = None,
    order: str = "desc",
) -> HttpResponse:
    """One page of the items the response was asked with, as OpenAI pages them."""
    if not 1 <= limit <= MAX_PAGE:
        raise invalid_request(f"limit must be between 1 and {MAX_PAGE}", param="limit")
    if order not in ("asc", "desc"):
        raise invalid_request("order must be 'asc' or 'desc'", param="order")
    user_id = _user(request, Claims(header_user=request.headers.get("X-User-Id")))
    page = await _found(input_items_page, user_id, response_id, timezone.now(), limit, after, order)
    ids = [item.get("id") for item in page.items]
    return json_response(
        {
            "object": "list",
            "data": page.items,
            "first_id": ids[0] if ids else None,
            "last_id": ids[-1] if ids else None,
            "has_more": page.has_more,
        }
    )


def _user(request: InferenceRequest, claims: Claims) -> str:
    holder = request.runtime.holder
    user_id = resolve_user_id(claims, live_config(holder.config, holder.problems), request.api_key)
    request.log.user = user_id
    return user_id


async def _found[R](function: Callable[..., R], user_id: str, response_id: str, *args: Any) -> R:
    try:
        result: R = await in_database(function, user_id, response_id, *args)
    except ResponseNotFound:
        raise ApiError(
            404,
            f"No response with id '{response_id}' is stored for this user",
            param="response_id",
            code="response_not_found",
        ) from None
    return result


def _keeper(user_id: str, read: ResponsesRequest, previous: str | None, started: datetime) -> Keep:
    """Stores a completed response for its user (unless erased since the request began,
    ``started``). A failure is logged, never raised: the answer is already made and
    billed; only its later retrieval fails."""

    async def keep(response: dict[str, Any]) -> None:
        try:
            await in_database(
                keep_response,
                user_id,
                response,
                read.input_items,
                previous,
                timezone.now(),
                started,
            )
        except Exception:
            logger.exception("could not store response %s", response.get("id"))

    return keep
