"""Texts into vectors with a configured embedder (docs/embeddings.md): through routing,
like any model call (retries, circuit breakers, an ``embeddings`` span), and priced."""

from typing import Literal

from agents.schema import Config, EmbedderConfig
from inference.neutral.calls import Embedded
from inference.neutral.types import EmbeddingRequest
from inference.routing.deployments import Deployment, Route
from inference.routing.upstream import RoutedCalls, RoutingEngine
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
    order, what they cost, and who made them."""
    route = Route((Deployment(embedder.provider, embedder.model),))
    request = EmbeddingRequest(
        embedder.model, tuple(texts), dimensions or embedder.dimensions, purpose, token_arrays
    )
    return await RoutedCalls(route, config, engine, span=span).embed(request)
