"""How many upstream calls one turn may make, all of its subagent levels together, and
until when.

Each level's tool loop is limited on its own (rounds, depth), and those limits multiply:
a chain of subagents that keep calling each other could make thousands of upstream calls
for one request. A turn's allowance holds for the turn as a whole: at most
``limits.max_model_calls_per_turn`` upstream calls (every attempt counts), none begun or
still running ``limits.max_turn_seconds`` after the turn began. (What each call may
spend is money's: ``inference.money.meter``.)
"""

import asyncio
from collections.abc import Awaitable, Callable

from agents.schema import LimitsConfig
from inference.providers.base import TurnStopped


class CallAllowance:
    """``going_on``: asked before each call, raises ``TurnStopped`` when the work is called
    off meanwhile (an evaluation cancelled from another process)."""

    def __init__(
        self, limits: LimitsConfig, going_on: Callable[[], Awaitable[None]] | None = None
    ) -> None:
        self.max_calls = limits.max_model_calls_per_turn
        self.seconds = limits.max_turn_seconds
        self.deadline = asyncio.get_running_loop().time() + self.seconds
        self.going_on = going_on
        self.calls = 0

    async def take(self) -> None:
        """One upstream call of the turn begins (raises when it may not)."""
        if self.calls >= self.max_calls:
            raise self.stopped(
                f"The turn made {self.calls} model calls, subagents included, without a final "
                f"answer (limits.max_model_calls_per_turn is {self.max_calls})"
            )
        if asyncio.get_running_loop().time() >= self.deadline:
            raise self.timed_out()
        if self.going_on is not None:
            await self.going_on()
        self.calls += 1

    def left(self) -> int:
        """How many more upstream calls the turn may make."""
        return self.max_calls - self.calls

    def timed_out(self) -> TurnStopped:
        return self.stopped(
            f"The turn ran longer than limits.max_turn_seconds ({self.seconds:g} s), "
            "subagents included"
        )

    def stopped(self, message: str) -> TurnStopped:
        return TurnStopped(502, message, code="tool_loop_limit")
