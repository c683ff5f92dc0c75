"""An embeddings request (OpenAI's ``/v1/embeddings``, Gemini's ``embedContent``): for a
user like any request, admitted within their budgets and the key's limits, billed to
them; a client that goes away with the call under way is billed its estimate."""

import asyncio
import uuid
from dataclasses import dataclass
from typing import Literal

from django.utils import timezone

from agents.schema import Config, EmbedderConfig
from core.requestlog import RequestLog
from inference.database import in_database
from inference.engine import Engine
from inference.money.admission import admit, release_quietly
from inference.money.caller import Caller
from inference.money.caps import operator_caps
from inference.money.keys import KeyGrant
from inference.money.prices import price_of, priced
from inference.money.settlement import Charge, charge, settle
from inference.neutral.calls import Answerer, Embedded
from inference.neutral.errors import invalid_request
from inference.neutral.request import Claims
from inference.neutral.tokens import estimate_tokens
from inference.neutral.types import Usage
from inference.providers.base import ProviderError
from inference.routing.embedding import embed
from inference.telemetry.spans import NO_SPAN, Span
from inference.turn.identity import resolve_user_id


@dataclass(frozen=True)
class EmbeddingAsk:
    """What a client asked to embed: texts, or inputs it tokenized itself (token arrays,
    for OpenAI-format embedders only), never both."""

    model: str  # the name the client sent (an embedder, or an alias of one)
    texts: tuple[str, ...] = ()
    token_arrays: tuple[tuple[int, ...], ...] = ()
    dimensions: int | None = None
    purpose: Literal["document", "query"] = "document"

    @property
    def estimated_tokens(self) -> int:
        return sum(estimate_tokens(text) for text in self.texts) + sum(
            len(tokens) for tokens in self.token_arrays
        )


def embedder_of(config: Config, model: str, param: str) -> EmbedderConfig:
    """The embedder ``model`` names (or aliases); 400 naming ``param`` otherwise."""
    embedder = config.embedder(config.target(model))
    if embedder is None:
        kind = "an agent" if config.agent(config.target(model)) else "not an embedder"
        raise invalid_request(
            f"The model '{model}' is {kind}: embeddings are made by the config's embedders",
            param=param,
            code="model_not_found",
        )
    return embedder


async def embed_for_user(
    ask: EmbeddingAsk,
    embedder: EmbedderConfig,
    claims: Claims,
    key: KeyGrant | None,
    config: Config,
    engine: Engine,
    log: RequestLog,
    span: Span = NO_SPAN,
    purpose: Literal["embedding", "batch"] = "embedding",
) -> Embedded:
    """``purpose``: a request's own (billed as a turn), or a batch line's."""
    user_id = resolve_user_id(claims, config, key)
    log.user, log.model, log.agent, log.provider = user_id, ask.model, "", embedder.provider
    if key is not None:
        key.check_allows(embedder.name)
    now = timezone.now()
    estimate = priced(
        Usage(prompt_tokens=ask.estimated_tokens),
        price_of(config, embedder.provider, embedder.model),
    )
    caps = operator_caps(config.budgets, user_id)
    caller = Caller(user_id, key, caps, purpose, span, now)
    reservation = await in_database(admit, caller, estimate, now, request=True)
    held = (reservation,) if reservation is not None else ()

    def billed(usage: Usage) -> Charge:
        return charge(
            caller,
            usage,
            agent=embedder.name,
            call_id=f"emb-{uuid.uuid4().hex}",
            answered_by=Answerer(embedder.provider, embedder.model),
            reservations=held,
            created_at=now,
        )

    try:
        embedded = await embed(
            config,
            engine,
            embedder,
            list(ask.texts),
            ask.purpose,
            ask.dimensions,
            span,
            ask.token_arrays,
        )
    except asyncio.CancelledError:
        # The client went away with the call under way: it is billed at the estimate.
        log.prompt_tokens, log.cost_usd = estimate.prompt_tokens, estimate.cost_usd
        await asyncio.shield(engine.writer.write(settle, billed(estimate)))
        raise
    except BaseException as error:
        # Nothing was spent: no ledger row will settle the reservation.
        await asyncio.shield(release_quietly(held))
        if not isinstance(error, ProviderError):
            raise
        log.error = error.code
        raise error.as_api_error() from error
    log.prompt_tokens = embedded.usage.prompt_tokens
    log.cost_usd = embedded.usage.cost_usd
    await engine.writer.write(settle, billed(embedded.usage))
    return embedded
