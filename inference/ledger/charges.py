"""Ledger rows of the work a turn causes after its reply (judges, shadow variants, memory
extraction): charged to the agent and experiment, never to the user's or a key's
budget."""

from typing import Protocol

from inference.models import LedgerEntry
from inference.providers.types import Usage


class Answered(Protocol):
    """Where the charged call went (a routing deployment)."""

    @property
    def provider(self) -> str: ...
    @property
    def model(self) -> str: ...


def charge_background(
    kind: str,
    completion_id: str,
    agent: str,
    experiment: str,
    variant: str,
    user_id: str,
    usage: Usage,
    upstream: Answered | None,
) -> LedgerEntry:
    """The ledger row of a run of ``kind`` ("judge", "shadow", "memory")."""
    return LedgerEntry(
        user_id=user_id,
        agent=agent,
        experiment=experiment,
        variant=variant,
        provider=upstream.provider if upstream is not None else "",
        model=upstream.model if upstream is not None else "",
        completion_id=completion_id,
        prompt_tokens=usage.prompt_tokens,
        completion_tokens=usage.completion_tokens,
        total_tokens=usage.total_tokens,
        cached_tokens=usage.cached_tokens or 0,
        cost_micro_usd=usage.cost_micro_usd,
        kind=kind,
    )
