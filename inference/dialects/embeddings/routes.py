"""``POST /v1/embeddings`` (docs/embeddings.md): OpenAI's embeddings API in front of the
config's embedders, for a user like any request, admitted within their budgets and key
limits, and billed to them."""

import asyncio
import uuid

from django.http import HttpResponse
from django.utils import timezone

from inference.database import in_database
from inference.dialects.embeddings.wire import EmbeddingsIn, embeddings_body, read_inputs
from inference.memory.embedding import embed
from inference.money.admission import admit, release_quietly
from inference.money.caps import operator_caps
from inference.money.prices import price_of, priced
from inference.money.settlement import Charge, settle
from inference.neutral.calls import Answerer
from inference.neutral.errors import invalid_request
from inference.neutral.request import Claims
from inference.neutral.types import Usage
from inference.providers.base import ProviderError
from inference.providers.registry import PROVIDER_CLASSES
from inference.serving.context import InferenceRequest
from inference.serving.routes import dialect_api
from inference.serving.serve import json_response
from inference.turn.identity import resolve_user_id
from inference.turn.preparation import live_config

api = dialect_api("embeddings", lambda path: "model and input")


@api.post("/v1/embeddings")
async def create_embeddings(request: InferenceRequest, payload: EmbeddingsIn) -> HttpResponse:
    holder, engine = request.runtime.holder, request.runtime.engine
    config = live_config(holder.config, holder.problems)
    inputs = read_inputs(payload)
    embedder = config.embedder(config.target(payload.model))
    if embedder is None:
        kind = "an agent" if config.agent(payload.model) else "not an embedder"
        raise invalid_request(
            f"The model '{payload.model}' is {kind}: /v1/embeddings takes an embedder of the "
            "config's embedders",
            param="model",
            code="model_not_found",
        )
    kind = config.provider_kind(embedder.provider)
    if inputs.token_arrays and not PROVIDER_CLASSES[kind].takes_token_arrays:
        raise invalid_request(
            f"input: token arrays are passed only to OpenAI-format embedders (they belong "
            f"to its tokenizer); '{embedder.name}' is of kind {kind}: send text",
            param="input",
            code="invalid_input",
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
    if key is not None:
        key.check_allows(embedder.name)
    now = timezone.now()
    estimate = priced(
        Usage(prompt_tokens=inputs.estimated_tokens),
        price_of(config, embedder.provider, embedder.model),
    )
    caps = operator_caps(config.budgets, user_id)
    reservation = await in_database(
        admit, user_id, caps, estimate.total_tokens, now, key, estimate.cost_micro_usd or 0
    )

    def charge(usage: Usage) -> Charge:
        return Charge(
            kind="turn",
            user_id=user_id,
            agent=embedder.name,
            call_id=f"emb-{uuid.uuid4().hex}",
            usage=usage,
            answered_by=Answerer(embedder.provider, embedder.model),
            key_id=key.id if key is not None else None,
            reservation=reservation,
            created_at=now,
            started_at=now,
        )

    try:
        embedded = await embed(
            config,
            engine,
            embedder,
            list(inputs.texts),
            dimensions=payload.dimensions,
            span=request.span,
            token_arrays=inputs.token_arrays,
        )
    except asyncio.CancelledError:
        # The client went away with the call under way: it is billed at the estimate.
        log.prompt_tokens, log.cost_usd = estimate.prompt_tokens, estimate.cost_usd
        await asyncio.shield(engine.writer.write(settle, charge(estimate)))
        raise
    except BaseException as error:
        if reservation is not None:  # nothing was spent: no ledger row will settle it
            await asyncio.shield(release_quietly(reservation))
        if not isinstance(error, ProviderError):
            raise
        log.error = error.code
        raise error.as_api_error() from error
    log.prompt_tokens = embedded.usage.prompt_tokens
    log.cost_usd = embedded.usage.cost_usd
    await engine.writer.write(settle, charge(embedded.usage))
    return json_response(
        embeddings_body(payload.model, embedded.vectors, embedded.usage, payload.encoding_format)
    )
