"""Texts into vectors with a configured embedder (docs/embeddings.md): through routing,
like any model call (retries, circuit breakers, an ``embeddings`` span), and priced."""

from datetime import datetime
from typing import Literal

from agents.schema import Config, EmbedderConfig
from inference.money.settlement import Charge, ChargeKind
from inference.neutral.calls import Answerer
from inference.neutral.types import Embedded, EmbeddingRequest, Usage
from inference.routing.deployments import Deployment, Route
from inference.routing.upstream import RoutingEngine, Upstream
from inference.telemetry.spans import NO_SPAN, Span


async def embed(
    config: Config,
    engine: RoutingEngine,
    embedder: EmbedderConfig,
    texts: list[str],
    purpose: Literal["document", "query"] = "document",
    dimensions: int | None = None,
    span: Span = NO_SPAN,
    token_arrays: tuple[tuple[int, ...], ...] = (),
) -> Embedded:
    """The vectors of ``texts`` (or of ``token_arrays``, inputs a client tokenized), in
    order, and what they cost."""
    route = Route((Deployment(embedder.provider, embedder.model),))
    request = EmbeddingRequest(
        embedder.model, tuple(texts), dimensions or embedder.dimensions, purpose, token_arrays
    )
    return await Upstream(route, config, engine, span=span).embed(request)


def embedding_charge(
    user_id: str,
    agent: str,
    embedder: EmbedderConfig,
    usage: Usage,
    call_id: str,
    started_at: datetime | None = None,
    kind: ChargeKind = "memory",
) -> Charge:
    """An embedding call made for an agent's memory (or its response cache, ``kind``
    "cache"): charged to the agent, outside the user's budget. ``started_at``: when the
    work it is part of began."""
    return Charge(
        kind=kind,
        user_id=user_id,
        agent=agent,
        call_id=call_id,
        usage=usage,
        answered_by=Answerer(embedder.provider, embedder.model),
        started_at=started_at,
    )
