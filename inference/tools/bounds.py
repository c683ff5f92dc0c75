"""How far one turn may go, all of its subagent levels together.

Each level's tool loop is limited on its own (rounds, depth), and those limits multiply:
a chain of subagents that keep calling each other could make thousands of upstream calls
for one request. A turn's bounds hold for the turn as a whole: at most
``limits.max_model_calls_per_turn`` model calls, none begun or still running
``limits.max_turn_seconds`` after the turn began, and each call after the first admitted
against the user's budgets with what the turn has spent so far (``Admission``), so a turn
overshoots a cap by at most one call.

The bounds also know the turn's model calls under way, at every level, each with an
estimate of what it has spent: a turn its client abandons is billed for them
(``spent`` and ``in_flight``), as the upstream bills the gateway for them.
"""

import asyncio
import itertools
from collections.abc import Awaitable, Callable

from agents.schema import LimitsConfig
from inference.neutral.errors import ApiError
from inference.neutral.types import Usage
from inference.providers.base import ProviderError

# Raises ApiError (429) when the turn, having spent what it is given, may not go on.
type Admission = Callable[[Usage], Awaitable[None]]


class TurnStopped(ProviderError):
    """The turn reached one of its bounds: it ends, at whatever level it was (a subagent's
    caller gets this, not a tool error)."""


class TurnBounds:
    def __init__(self, limits: LimitsConfig, admission: Admission | None = None) -> None:
        self.max_calls = limits.max_model_calls_per_turn
        self.seconds = limits.max_turn_seconds
        self.deadline = asyncio.get_running_loop().time() + self.seconds
        self.admission = admission
        self.calls = 0
        self.spent = Usage()  # by every finished model call of the turn, at every level
        self._under_way: dict[int, Callable[[], Usage]] = {}
        self._numbers = itertools.count()

    def calling(self, estimate: Callable[[], Usage]) -> int:
        """A model call begins: until it is ``done``, ``estimate()`` is what it has spent."""
        number = next(self._numbers)
        self._under_way[number] = estimate
        return number

    def done(self, call: int) -> None:
        """The call ended and what it spent is accounted (in ``spent``, or not at all)."""
        self._under_way.pop(call, None)

    def in_flight(self) -> Usage:
        """The estimate of every call begun and not done (one the client's departure cut)."""
        return sum((estimate() for estimate in self._under_way.values()), Usage())

    async def admit(self) -> None:
        """Before each upstream model call of the turn."""
        if self.calls >= self.max_calls:
            raise self.stopped(
                f"The turn made {self.calls} model calls, subagents included, without a final "
                f"answer (limits.max_model_calls_per_turn is {self.max_calls})"
            )
        if asyncio.get_running_loop().time() >= self.deadline:
            raise self.timed_out()
        if self.admission is not None and self.calls:
            try:
                await self.admission(self.spent)
            except ApiError as refusal:
                retry = refusal.headers.get("Retry-After")
                raise TurnStopped(
                    refusal.status,
                    refusal.message,
                    code=refusal.code or "rate_limit_exceeded",
                    retry_after=int(retry) if retry is not None else None,
                    error_type=refusal.error_type,
                    usage=self.spent,
                ) from refusal
        self.calls += 1

    def left(self) -> int:
        """How many more model calls the turn may make."""
        return self.max_calls - self.calls

    def timed_out(self) -> TurnStopped:
        return self.stopped(
            f"The turn ran longer than limits.max_turn_seconds ({self.seconds:g} s), "
            "subagents included"
        )

    def stopped(self, message: str) -> TurnStopped:
        return TurnStopped(502, message, code="tool_loop_limit", usage=self.spent)
