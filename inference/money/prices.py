"""What an upstream call cost, in millionths of a US dollar (docs/cost-and-keys.md).

Prices come from the ``genai-prices`` package (pinned: prices differ between its
versions) for the model as its provider kind names it, unless the config's ``pricing:``
section prices ``<provider name>/<model>``. A model with no known price costs ``None``:
unknown, never guessed.

cost = uncached input * input + cache reads * cache_read + cache writes * cache_write
+ output (reasoning included) * output, each price in USD per million tokens, so a
price times a token count is micro-USD.

genai-prices (1.6 MB, and 4 MB more for its table) is loaded by the first price looked up
in the table: a process whose prices all come from the config never loads it. Loading the
table takes about 130 ms, so the engine looks up every price a config needs in a worker
thread when it is applied (``look_up_prices``), not on the event loop of the first
request that needs it.
"""

from collections.abc import Callable
from dataclasses import dataclass, replace
from decimal import Decimal
from functools import cache

from agents.schema import Config
from core.providerkinds import PROVIDER_KINDS
from inference.neutral.types import Usage


@dataclass(frozen=True)
class Price:
    """USD per million tokens; ``tiered``: the micro-USD of a call by genai-prices' own
    price, when that depends on the prompt's size (computed by the package for each call)."""

    input: float
    output: float
    cache_read: float
    cache_write: float
    tiered: Callable[[Usage], int] | None = None

    def cost(self, usage: Usage) -> int:
        """Micro-USD of ``usage``."""
        if self.tiered is not None:
            return self.tiered(usage)
        cached, writes = usage.cached_tokens or 0, usage.cache_write_tokens or 0
        uncached = max(0, usage.prompt_tokens - cached - writes)
        return round(
            uncached * self.input
            + cached * self.cache_read
            + writes * self.cache_write
            + usage.completion_tokens * self.output
        )


def price_of(config: Config, provider: str, model: str) -> Price | None:
    """The price of ``model`` served by the provider called ``provider`` (None: unknown)."""
    override = config.pricing.get(f"{provider}/{model}")
    if override is not None:
        return Price(
            override.input,
            override.output,
            override.input if override.cache_read is None else override.cache_read,
            override.input if override.cache_write is None else override.cache_write,
        )
    return _table_price(config.provider_kind(provider), model)


def look_up_prices(config: Config) -> None:
    """The price of every model ``config`` calls, looked up once (then cached)."""
    upstreams = [(item.provider, item.model) for item in config.embedders]
    for agent in config.agents:
        upstreams.append((agent.provider, agent.model))
        upstreams += [(item.provider, item.model) for item in agent.deployments]
        upstreams += [(item.provider, item.model) for item in agent.fallbacks]
    for provider, model in upstreams:
        price_of(config, provider, model)


def priced(usage: Usage, price: Price | None) -> Usage:
    """``usage`` of one call with its cost."""
    return replace(usage, cost_micro_usd=price.cost(usage) if price is not None else None)


# What a provider batch's line costs of the standard price: OpenAI's Batch API and
# Anthropic's Message Batches both charge half, and the price table has no batch rates.
BATCH_RATE = 0.5


def batch_priced(usage: Usage, price: Price | None) -> Usage:
    """``usage`` of one line of a provider batch, with its cost at the batch rate."""
    if price is None:
        return replace(usage, cost_micro_usd=None)
    return replace(usage, cost_micro_usd=round(price.cost(usage) * BATCH_RATE))


@cache
def _table_price(kind: str, model: str) -> Price | None:
    from genai_prices import Usage as PricedUsage
    from genai_prices import calc_price

    try:
        found = calc_price(
            PricedUsage(input_tokens=0),
            model.removeprefix("models/"),
            provider_id=PROVIDER_KINDS[kind].price_table,
        ).model_price
    except LookupError:
        return None
    parts = (found.input_mtok, found.output_mtok, found.cache_read_mtok, found.cache_write_mtok)
    if any(part is not None and not isinstance(part, Decimal) for part in parts):

        def tiered(usage: Usage) -> int:
            priced = PricedUsage(
                input_tokens=usage.prompt_tokens,
                cache_read_tokens=usage.cached_tokens or 0,
                cache_write_tokens=usage.cache_write_tokens or 0,
                output_tokens=usage.completion_tokens,
            )
            return round(found.calc_price(priced)["total_price"] * 1_000_000)

        return Price(0, 0, 0, 0, tiered=tiered)
    given, output, read, write = (
        float(part) if isinstance(part, Decimal) else None for part in parts
    )
    input_price = given or 0.0
    return Price(
        input_price,
        output or 0.0,
        input_price if read is None else read,
        input_price if write is None else write,
    )
