"""Live traffic on this process, as batch lines see it: the API requests being answered
that call models (not uploads, not polls of batches). Lines wait while there are
``batches.yield_above`` of them or more, so live traffic goes first."""

import asyncio


class LiveTraffic:
    def __init__(self) -> None:
        self.in_flight = 0
        self._quieter = asyncio.Event()

    def enter(self) -> None:
        self.in_flight += 1

    def leave(self) -> None:
        self.in_flight -= 1
        self._quieter.set()

    async def below(self, limit: int) -> None:
        """Return once fewer than ``limit`` live requests are in flight."""
        while self.in_flight >= limit:
            self._quieter.clear()
            await self._quieter.wait()
