"""The seam before the upstream: how a conversation calls a model.

The tool loop (``inference.tools.loop``) holds a ``ModelCalls`` and nothing more concrete;
routing (``inference.routing.upstream``) implements it, sending each call to a deployment
of the agent's route with retries, fallbacks, circuit breakers and spans, and whatever
stands between the loop and routing (a response cache) implements it too.
"""

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Protocol

from inference.neutral.types import ChatRequest, ChatResponse, StreamEvent, Usage


@dataclass(frozen=True)
class Answerer:
    """Who answered a model call: a provider (its name in the config) and its model."""

    provider: str
    model: str

    @property
    def label(self) -> str:
        """How responses and logs name it: ``<provider>/<model>``."""
        return f"{self.provider}/{self.model}"


@dataclass(frozen=True)
class CallOutcome:
    """What is known of the latest model call beyond its reply: who answered it, and in how
    many upstream attempts (retries and fallbacks included)."""

    answered_by: Answerer | None = None
    attempts: int = 0


class ModelCalls(Protocol):
    """One conversation's model calls. Replies leave priced (``Usage.cost_micro_usd``)."""

    async def complete(self, request: ChatRequest) -> ChatResponse: ...

    def stream(self, request: ChatRequest, *, held: bool = False) -> AsyncIterator[StreamEvent]:
        """The reply's events. ``held``: the caller collects the whole reply before anyone
        sees it (a failure anywhere in it may still be tried again)."""
        ...

    @property
    def outcome(self) -> CallOutcome: ...

    def priced(self, usage: Usage) -> Usage:
        """``usage`` priced as the latest call's answerer prices it (for an estimate of a
        call cut short)."""
        ...
