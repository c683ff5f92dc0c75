"""Texts into vectors with a configured embedder (docs/embeddings.md), each call priced
like any other and billed as a ledger row of its user."""

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from agents.schema import Config, EmbedderConfig
from inference.ledger.prices import price_of, priced
from inference.ledger.tokens import estimate_tokens
from inference.models import BudgetReservation, LedgerEntry
from inference.providers.registry import ProviderClients
from inference.providers.types import EmbeddingRequest, Usage


@dataclass(frozen=True)
class Embedded:
    vectors: tuple[tuple[float, ...], ...]  # one per text, in order
    usage: Usage  # prompt tokens only, and their cost


@dataclass(frozen=True)
class EmbeddingBill:
    """One embedding call's ledger row, and the budget reservation it replaces. A call of
    ``/v1/embeddings`` is billed to the user under the embedder's name (``kind`` "turn");
    one of an agent's memory to the agent (``kind`` "memory", outside the user's budget)."""

    user_id: str
    embedder: EmbedderConfig
    usage: Usage
    call_id: str
    now: datetime
    key_id: int | None = None
    reservation: int | None = None
    agent: str | None = None  # None: the embedder's name
    kind: str = "turn"


async def embed(
    config: Config,
    providers: ProviderClients,
    embedder: EmbedderConfig,
    texts: list[str],
    purpose: Literal["document", "query"] = "document",
    dimensions: int | None = None,
) -> Embedded:
    """The vectors of ``texts``; their tokens are the provider's count, or estimated at
    four characters a token where it gives none (Gemini)."""
    provider = providers.provider(embedder.provider, config)
    request = EmbeddingRequest(
        embedder.model, tuple(texts), dimensions or embedder.dimensions, purpose
    )
    answer = await provider.embed(request)
    tokens = answer.prompt_tokens
    if tokens is None:
        tokens = sum(estimate_tokens(text) for text in texts)
    price = price_of(config, embedder.provider, embedder.model)
    return Embedded(answer.vectors, priced(Usage(prompt_tokens=tokens), price))


def record_embeddings(bills: list[EmbeddingBill]) -> None:
    """Write the bills (the writer holds the transaction): billed to the user as turns
    are, so budgets and keys count them, under the embedder's name."""
    LedgerEntry.objects.bulk_create(
        LedgerEntry(
            user_id=bill.user_id,
            agent=bill.agent or bill.embedder.name,
            kind=bill.kind,
            provider=bill.embedder.provider,
            model=bill.embedder.model,
            completion_id=bill.call_id,
            prompt_tokens=bill.usage.prompt_tokens,
            completion_tokens=0,
            total_tokens=bill.usage.prompt_tokens,
            cost_micro_usd=bill.usage.cost_micro_usd,
            api_key_id=bill.key_id,
            created_at=bill.now,
        )
        for bill in bills
    )
    reservations = [bill.reservation for bill in bills if bill.reservation is not None]
    if reservations:
        BudgetReservation.objects.filter(id__in=reservations).delete()
