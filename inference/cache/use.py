"""How one turn uses the cache: what its request allows (``Cache-Control: no-cache``
skips the lookup, ``no-store`` or ``metadata.cache: "off"`` skip it entirely), whose
answers it may get, and what its cached calls did, at every level of the turn (the
record writes it with the turn, and the response's headers tell it)."""

from dataclasses import dataclass, field
from typing import Literal

from agents.schema import AgentCacheConfig
from inference.cache.store import NewEntry
from inference.money.settlement import Charge
from inference.neutral.types import Usage

type CacheResult = Literal["hit", "miss", "bypass"]


@dataclass(frozen=True)
class CacheControl:
    reads: bool = True
    writes: bool = True

    @property
    def bypassed(self) -> bool:
        return not (self.reads or self.writes)


def cache_control(header: str | None, off: bool) -> CacheControl:
    """The request's ``Cache-Control`` directives (``no-cache``, ``no-store``; others
    ignored) and ``metadata.cache``."""
    directives = {part.strip().lower() for part in (header or "").split(",")}
    if off or "no-store" in directives:
        return CacheControl(reads=False, writes=False)
    return CacheControl(reads="no-cache" not in directives)


@dataclass(frozen=True)
class Hit:
    key: str
    usage: Usage  # as first paid


@dataclass(frozen=True)
class LastCall:
    """The answering conversation's latest call, as the response's headers tell it."""

    result: CacheResult
    age: int | None = None  # seconds, of a hit
    key: str | None = None  # the entry behind the reply (a hit's, or the one just stored)


@dataclass
class TurnCache:
    """One turn's use of the cache (``control``) for ``user_id`` and the minted key that
    pays, if any; what its calls did is gathered here."""

    control: CacheControl
    user_id: str
    key_id: int | None = None
    hits: list[Hit] = field(default_factory=list)
    stored: list[NewEntry] = field(default_factory=list)
    charges: list[Charge] = field(default_factory=list)  # embeddings of semantic lookups
    last: LastCall | None = None

    @property
    def result(self) -> CacheResult:
        """What the response's headers say: the answering conversation's latest call (a
        stream's headers may leave before it ends: a hit is known by then)."""
        if self.control.bypassed:
            return "bypass"
        return self.last.result if self.last is not None else "miss"

    def scope(self, cache: AgentCacheConfig) -> str:
        """Whose answers the agent's calls may get: its user's, its key's (a request
        without a minted key: its user's), or everyone's."""
        if cache.scope == "global":
            return "global"
        if cache.scope == "key" and self.key_id is not None:
            return f"key:{self.key_id}"
        return f"user:{self.user_id}"

    @property
    def shown(self) -> Usage:
        """What the hits report to the client: their tokens as first paid, at no cost."""
        total = sum((hit.usage for hit in self.hits), Usage())
        return Usage(
            total.prompt_tokens,
            total.completion_tokens,
            total.cached_tokens,
            total.reasoning_tokens,
            total.cache_write_tokens,
            0,
        )

    @property
    def saved_micro_usd(self) -> int:
        return sum(hit.usage.cost_micro_usd or 0 for hit in self.hits)
