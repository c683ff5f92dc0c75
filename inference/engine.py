"""The long-lived parts of ``/v1``: provider clients, MCP servers, the writer of the
turns' records, background work and the trace exporter.

The process runtime owns one engine, starts it on the server's event loop and hands it
every config that gets applied; request code only borrows from it.
"""

import asyncio
import contextlib
import random
from typing import Any

from agents.schema import Config
from inference.background import BackgroundTasks
from inference.guardrails.presidio import prepare as prepare_pii
from inference.ledger.writer import RecordWriter
from inference.money.prices import look_up_prices
from inference.providers.registry import ProviderClients
from inference.routing.circuits import Circuits
from inference.telemetry.tracing import TRACING
from inference.tools.mcp import McpHub
from inference.tools.signal import TaskSignal
from inference.traffic import LiveTraffic


class Engine:
    def __init__(self) -> None:
        self.providers = ProviderClients()
        self.circuits = Circuits()  # every deployment's, shared by the process's requests
        self.mcp = McpHub()
        self.background = BackgroundTasks()
        self.writer = RecordWriter()
        self.tasks = TaskSignal()  # wakes the process's task runner (inference.automation)
        self.batches = TaskSignal()  # wakes the process's batch runner (inference.batches)
        self.live = LiveTraffic()  # live requests in flight: batch lines give way to them
        # The one source of the process's random choices (experiment arms, shadow rates,
        # judge sampling), so a test can seed every draw at once.
        self.rng = random.Random()
        # Long-lived work a request started (the MCP server's session manager), ended
        # after the background work.
        self.services: set[asyncio.Task[Any]] = set()
        self._loop: asyncio.AbstractEventLoop | None = None

    async def start(self, config: Config | None) -> None:
        self._loop = asyncio.get_running_loop()
        if config is not None:
            TRACING.apply(config.telemetry)
            self._look_up_prices(config)
            self._prepare_guardrails(config)
            await self.mcp.apply(config.mcp)

    def config_applied(self, config: Config) -> None:
        """Follow a newly applied config (called from whichever thread reloaded it)."""
        loop = self._loop
        if loop is None or loop.is_closed():
            return  # not started yet: start() applies the config then
        loop.call_soon_threadsafe(self._apply, config)

    async def stop(self) -> None:
        # Requests still answered at shutdown hand their records to the writer as they
        # end (background.stop waits for them): the writer stops after them.
        await self.background.stop()
        for service in list(self.services):
            service.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await service
        await self.writer.stop()
        await self.mcp.stop()
        await self.providers.aclose()
        await asyncio.to_thread(TRACING.shutdown)  # sends the spans it still holds

    def _apply(self, config: Config) -> None:
        TRACING.apply(config.telemetry)
        self._look_up_prices(config)
        self._prepare_guardrails(config)
        self.background.spawn(self.mcp.apply(config.mcp), name="apply mcp config")

    def _look_up_prices(self, config: Config) -> None:
        work = asyncio.to_thread(look_up_prices, config)
        self.background.spawn(work, name="look up prices")

    def _prepare_guardrails(self, config: Config) -> None:
        work = asyncio.to_thread(prepare_pii, config)
        self.background.spawn(work, name="load the pii guardrails' analyzer")
