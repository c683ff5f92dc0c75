"""What a request lets the cache do (``Cache-Control: no-cache`` skips the lookup,
``no-store`` or ``metadata.cache: "off"`` skip it entirely), and whose answers a call
may get (its user's, its key's, or everyone's)."""

from dataclasses import dataclass

from agents.schema import AgentCacheConfig
from inference.money.caller import Caller


@dataclass(frozen=True)
class CacheControl:
    reads: bool = True
    writes: bool = True

    @property
    def bypassed(self) -> bool:
        return not (self.reads or self.writes)


NEVER = CacheControl(reads=False, writes=False)


def cache_control(header: str | None, off: bool) -> CacheControl:
    """The request's ``Cache-Control`` directives (``no-cache``, ``no-store``; others
    ignored) and ``metadata.cache``."""
    directives = {part.strip().lower() for part in (header or "").split(",")}
    if off or "no-store" in directives:
        return NEVER
    return CacheControl(reads="no-cache" not in directives)


def scope_of(cache: AgentCacheConfig, caller: Caller) -> str:
    """Whose answers the agent's calls may get: its user's, its key's (a caller without a
    minted key: its user's), or everyone's."""
    if cache.scope == "global":
        return "global"
    if cache.scope == "key" and caller.key_id is not None:
        return f"key:{caller.key_id}"
    return f"user:{caller.user_id}"
