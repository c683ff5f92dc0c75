"""What a billing API answers, whichever provider's: lines of billed USD per UTC day and
model, a page at a time; and why a fetch failed."""

from dataclasses import dataclass
from datetime import date
from decimal import ROUND_HALF_EVEN, Decimal
from typing import Any, Protocol

from agents.schema import BillingConfig, Config

_MICRO = Decimal(1_000_000)
NO_MODEL = "(no model)"  # a cost a bill names no model or line item for


class BillingError(Exception):
    """A billing API could not be read; the message says why (no secret in it)."""


@dataclass(frozen=True)
class BilledLine:
    day: date  # UTC
    model: str  # the model's name as the ledger writes it
    micro_usd: int


@dataclass(frozen=True)
class BillRequest:
    """One ``GET`` of a billing API."""

    url: str
    params: tuple[tuple[str, str], ...]
    headers: dict[str, str]


@dataclass(frozen=True)
class BillPage:
    lines: list[BilledLine]
    next_page: str | None  # None: the last page


class BillingApi(Protocol):
    """One provider kind's billing API: the request of a page, and what a page says."""

    def request(
        self, base_url: str, billing: BillingConfig, first: date, last: date, page: str | None
    ) -> BillRequest:
        """The ``GET`` of the costs of the days ``first`` to ``last`` (UTC, both included),
        from the page ``page`` (None: the first)."""
        ...

    def read(self, body: Any, billing: BillingConfig) -> BillPage:
        """The lines of an answer; ``BillingError`` when it is not a cost report."""
        ...


def micro_usd(usd: Decimal) -> int:
    """USD as whole millionths (half to even, as the ledger's costs are rounded)."""
    return int((usd * _MICRO).to_integral_value(ROUND_HALF_EVEN))


def model_of_line_item(line_item: str | None) -> str:
    """The model a line of a bill names: the part before a comma (``"gpt-4o, input"``)."""
    return (line_item or "").split(",", 1)[0].strip() or NO_MODEL


def billing_providers(config: Config) -> list[str]:
    """The names of the providers whose bills the gateway reads (``billing`` set)."""
    return [name for name, provider in config.providers.items() if provider.billing is not None]
