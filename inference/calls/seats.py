"""The model-call layer of native mode (docs/batches.md): a batch line's turn runs as any
other (admitted under its caller's limits, its budget reserved, its reply rendered in its
dialect, its usage settled), except that its model call, instead of going upstream,
takes a seat in the provider batch being gathered and waits for that batch's result.

Each line's task sets its own ``Seat`` in ``SEAT``; ``model_calls``
(``inference.calls.factory``) puts ``NativeCalls`` in place of routing for the calls of
the agent the line called. Only the line's first call takes the seat: a later one (a
structured-output repair) goes upstream as a live call, at the standard rate.
"""

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from contextvars import ContextVar
from dataclasses import dataclass, replace

from inference.money.prices import Price, batch_priced
from inference.neutral.calls import CallResult, CallStream, ModelCalls
from inference.neutral.types import ChatRequest, ChatResponse
from inference.routing.deployments import Deployment


class Gathering:
    """The calls of one provider batch's lines, as each line's turn reaches its model
    call; ``ready`` once every line has either called or ended without calling."""

    def __init__(self, lines: int) -> None:
        self.waiting = lines
        self.calls: dict[str, tuple[ChatRequest, asyncio.Future[ChatResponse]]] = {}
        self.ready = asyncio.Event()
        if not lines:
            self.ready.set()

    async def call(self, custom_id: str, request: ChatRequest) -> ChatResponse:
        future: asyncio.Future[ChatResponse] = asyncio.get_running_loop().create_future()
        self.calls[custom_id] = (request, future)
        self.arrived()
        return await future

    def arrived(self) -> None:
        """A line called, or ended without calling."""
        self.waiting -= 1
        if self.waiting <= 0:
            self.ready.set()


@dataclass
class Seat:
    """One line's place in a gathering, under the custom id the provider batch knows it
    by; ``used`` once its call took it."""

    gathering: Gathering
    custom_id: str
    used: bool = False


SEAT: ContextVar[Seat | None] = ContextVar("batch_seat", default=None)


class NativeCalls:
    """A line's calls: the first one through its seat, priced at the batch rate; the
    others through ``calls`` (routing)."""

    def __init__(
        self, calls: ModelCalls, seat: Seat, deployment: Deployment, price: Price | None
    ) -> None:
        self.calls = calls
        self.seat = seat
        self.deployment = deployment
        self.price = price

    async def complete(self, request: ChatRequest) -> CallResult:
        if self.seat.used:
            return await self.calls.complete(request)
        self.seat.used = True
        request = replace(request, model=self.deployment.model)
        reply = await self.seat.gathering.call(self.seat.custom_id, request)
        reply = replace(reply, usage=batch_priced(reply.usage, self.price))
        return CallResult(reply, self.deployment)

    @asynccontextmanager
    async def stream(
        self, request: ChatRequest, *, held: bool = False
    ) -> AsyncIterator[CallStream]:
        async with self.calls.stream(request, held=held) as opened:
            yield opened
