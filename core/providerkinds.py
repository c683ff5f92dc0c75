"""The provider kinds a config may name, listed once.

The config's schema (``agents.schema``) takes its vocabulary of kinds and the kinds an
embedder may use from here, and the provider registry (``inference.providers``) maps
each kind's wire format to the module that speaks it. Adding a kind of an existing wire
format is one line below.
"""

from dataclasses import dataclass
from typing import Literal, get_args

type WireFormat = Literal["openai", "anthropic", "gemini", "cohere"]
ProviderKindName = Literal["anthropic", "cohere", "deepseek", "gemini", "groq", "openai"]


@dataclass(frozen=True)
class ProviderKind:
    """A provider kind: the wire format it speaks, its public URL, and how the GenAI
    conventions (``gen_ai.provider.name``) and the price table (genai-prices) name it."""

    name: ProviderKindName
    wire: WireFormat
    base_url: str
    telemetry_name: str
    price_table: str
    documents: bool = False  # whether it takes PDFs as they are (else their text)
    embeds: bool = False  # whether it serves embeddings
    bills: bool = False  # whether the gateway reads what it billed (docs/reconciliation.md)


PROVIDER_KINDS: dict[str, ProviderKind] = {
    kind.name: kind
    for kind in (
        ProviderKind(
            "openai", "openai", "https://api.openai.com/v1", "openai", "openai", True, True, True
        ),
        ProviderKind(
            "groq", "openai", "https://api.groq.com/openai/v1", "groq", "groq", embeds=True
        ),
        ProviderKind(
            "deepseek", "openai", "https://api.deepseek.com/v1", "deepseek", "deepseek", embeds=True
        ),
        ProviderKind(
            "anthropic",
            "anthropic",
            "https://api.anthropic.com",
            "anthropic",
            "anthropic",
            documents=True,
            bills=True,
        ),
        ProviderKind(
            "gemini",
            "gemini",
            "https://generativelanguage.googleapis.com",
            "gcp.gemini",
            "google",
            documents=True,
            embeds=True,
        ),
        ProviderKind("cohere", "cohere", "https://api.cohere.com", "cohere", "cohere", embeds=True),
    )
}
KIND_NAMES: tuple[str, ...] = get_args(ProviderKindName)
EMBEDDING_KINDS: tuple[str, ...] = tuple(
    name for name, kind in PROVIDER_KINDS.items() if kind.embeds
)
BILLING_KINDS: tuple[str, ...] = tuple(name for name, kind in PROVIDER_KINDS.items() if kind.bills)
# The kinds whose own batch API the gateway sends batches to (``batch: native``).
NATIVE_BATCH_KINDS: tuple[str, ...] = ("openai", "anthropic")
assert set(KIND_NAMES) == set(PROVIDER_KINDS), "every kind name is described once"
