"""``POST /v1/embeddings`` (docs/embeddings.md): OpenAI's embeddings API in front of the
config's embedders, for a user like any request, within their budgets and key limits,
and billed to them."""

import asyncio
import uuid

from django.http import HttpResponse
from django.utils import timezone
from ninja import Router

from inference.api.context import InferenceRequest
from inference.api.serve import json_response
from inference.errors import ApiError, invalid_request
from inference.ledger.budgets import operator_caps, reserve
from inference.ledger.database import in_database
from inference.ledger.tokens import estimate_tokens
from inference.memory.embedding import EmbeddingBill, embed, record_embeddings
from inference.providers.base import ProviderError
from inference.turn.identity import Claims, resolve_user_id
from inference.turn.preparation import live_config, release_quietly
from inference.wire.embeddings import EmbeddingsIn, embeddings_body, input_texts

router = Router()


@router.post("")
async def create_embeddings(request: InferenceRequest, payload: EmbeddingsIn) -> HttpResponse:
    holder, engine = request.runtime.holder, request.runtime.engine
    config = live_config(holder.config, holder.problems)
    texts = input_texts(payload)
    embedder = config.embedder(payload.model)
    if embedder is None:
        kind = "an agent" if config.agent(payload.model) else "not an embedder"
        raise invalid_request(
            f"The model '{payload.model}' is {kind}: /v1/embeddings takes an embedder of the "
            "config's embedders",
            param="model",
            code="model_not_found",
        )
    key = request.api_key
    claims = Claims(
        user=payload.user,
        header_user=request.headers.get("X-User-Id"),
        bound_user=request.bound_user,
    )
    user_id = resolve_user_id(claims, config, key)
    log = request.log
    log.user, log.model, log.agent, log.provider = user_id, embedder.name, "", embedder.provider
    if key is not None and not key.allows(embedder.name):
        raise ApiError(
            403,
            f"This API key may not call '{embedder.name}'",
            code="model_not_allowed",
            param="model",
        )
    now = timezone.now()
    tokens = sum(estimate_tokens(text) for text in texts)
    caps = operator_caps(config.budgets, user_id)
    reservation = await in_database(reserve, user_id, caps, tokens, now, key)
    try:
        embedded = await embed(
            config, engine.providers, embedder, texts, dimensions=payload.dimensions
        )
    except BaseException as error:
        if reservation is not None:  # nothing was spent: no ledger row will settle it
            await asyncio.shield(release_quietly(reservation))
        if not isinstance(error, ProviderError):
            raise
        log.error = error.code
        raise ApiError(
            error.status, error.message, code=error.code, error_type=error.error_type
        ) from error
    log.prompt_tokens = embedded.usage.prompt_tokens
    log.cost_usd = embedded.usage.cost_usd
    bill = EmbeddingBill(
        user_id,
        embedder,
        embedded.usage,
        f"emb-{uuid.uuid4().hex}",
        now,
        key.id if key is not None else None,
        reservation,
    )
    await engine.writer.write(record_embeddings, bill)
    return json_response(
        embeddings_body(embedder.name, embedded.vectors, embedded.usage, payload.encoding_format)
    )
