"""Native mode (docs/batches.md): the lines of a batch whose agent is on a provider with
``batch: native`` go upstream as one provider batch per provider, through its own batch
API (``inference.providers.batchapi``), which is polled every ``batches.poll_seconds`` and
read back line by line.

Each line still runs as a request of the batch's caller: its turn is prepared and
admitted (the key's agents, its limits, a budget reservation), and its model call takes a
seat in the gathering (``inference.calls.seats``). Once every line has called or been
refused, the gathered calls are sent as one provider batch, whose id is kept with each
line (``upstream``) before anything else happens: a process taking the batch over polls
that provider batch again (its lines' turns prepared again, their calls waiting on it)
and never sends it a second time. The provider batch's answers are read as the
provider's replies, so each line is rendered in its dialect and billed (at the batch
rate) as a gateway-run line is.
"""

import asyncio
import logging
import uuid
from collections.abc import Callable, Iterable
from typing import Any, Literal

from django.utils import timezone

from agents.schema import AgentConfig, Config
from core.providerkinds import NATIVE_BATCH_KINDS
from inference.batches import records
from inference.batches.lines import LineOutcome, RateLimited, refused, run_line
from inference.calls.seats import SEAT, Gathering, Seat
from inference.database import in_database
from inference.engine import Engine
from inference.models import BatchLine
from inference.neutral.errors import ApiError
from inference.providers.base import Provider, ProviderError
from inference.providers.batchapi import BatchApi, LineResult, batch_api
from inference.serving.batchline import BatchLines, LineCaller

logger = logging.getLogger("gateway.batches")
MAX_WAIT = 60.0  # seconds a rate-limited line waits at most before it is admitted again
# The error codes of a line its provider batch never ran, and how the line ends.
UNRUN: dict[str, Literal["cancelled", "expired"]] = {
    "batch_cancelled": "cancelled",
    "batch_expired": "expired",
}


def native_provider(config: Config, lines: BatchLines, body: dict[str, Any]) -> str | None:
    """The provider whose batch a line of ``lines`` joins (None: it runs through the
    gateway, as embeddings do)."""
    if lines.embedders:
        return None
    agent = config.agent(config.target(str(body.get("model"))))
    if agent is None or not one_call(agent):
        return None
    provider = config.providers.get(agent.provider)
    if provider is None or provider.batch != "native":
        return None
    return agent.provider if config.provider_kind(agent.provider) in NATIVE_BATCH_KINDS else None


def one_call(agent: AgentConfig) -> bool:
    """Whether a turn of ``agent`` is one model call to one provider: no tool the gateway
    runs (subagents, MCP tools, skills, tasks), no memory, no response cache, no other
    deployments or fallbacks."""
    return not (
        agent.subagents
        or agent.mcp_tools
        or agent.skills
        or agent.tasks
        or agent.memory
        or agent.cache
        or agent.deployments
        or agent.fallbacks
    )


class NativeRun:
    """The lines of one batch in one provider batch of ``provider``: sent (unless
    ``native_batch`` names it already), polled, and each line ended."""

    def __init__(
        self,
        batch_id: str,
        provider: str,
        lines: list[BatchLine],
        native_batch: str,
        caller: LineCaller,
        config: Callable[[], Config | None],
        engine: Engine,
        answerer: BatchLines,
    ) -> None:
        self.batch_id = batch_id
        self.provider = provider
        self.lines = lines
        self.native_batch = native_batch
        self.caller = caller
        self.config = config
        self.engine = engine
        self.answerer = answerer
        self.gathering = Gathering(len(lines))
        self.window_ended = False

    async def run(self) -> None:
        config = await self._config()
        provider = self.engine.providers.provider(self.provider, config)
        api = batch_api(provider)
        tasks = [asyncio.ensure_future(self._line(line)) for line in self.lines]
        try:
            await self.gathering.ready.wait()
            calls = self.gathering.calls
            if calls:
                results = await self._results(api, provider, config)
                self._answer(provider, results)
        except asyncio.CancelledError:
            # The process is stopping: its lines are left as they are (not failed, not
            # billed), for the process that takes the batch over to poll again.
            raise
        except Exception as error:
            self._fail(error)
            await asyncio.gather(*tasks, return_exceptions=True)
            raise
        await asyncio.gather(*tasks, return_exceptions=True)

    async def _results(
        self, api: BatchApi, provider: Provider, config: Config
    ) -> dict[str, LineResult] | ProviderError:
        """What the provider batch answered each gathered call (a ``ProviderError``: it
        could not be sent)."""
        calls = self.gathering.calls
        if not self.native_batch:
            if await self._stopping():  # cancelled while its lines were admitted: not sent
                unsent = LineResult(499, unsent="expired" if self.window_ended else "cancelled")
                return dict.fromkeys(calls, unsent)
            ordered = [_custom_id(line) for line in self.lines if _custom_id(line) in calls]
            bodies = {custom_id: provider.batch_body(calls[custom_id][0]) for custom_id in ordered}
            try:
                self.native_batch = await api.send(bodies)
            except ProviderError as error:
                logger.warning(
                    "batch %s: %s refused its batch: %s", self.batch_id, self.provider, error
                )
                return error
            sent = [line.id for line in self.lines if _custom_id(line) in calls]
            await in_database(records.in_provider_batch, sent, self.native_batch)
        state = await self._ended(api, config)
        while True:
            try:
                return await api.results(state, list(calls))
            except ProviderError as error:
                logger.warning(
                    "batch %s: reading %s failed: %s", self.batch_id, self.native_batch, error
                )
            config = self.config() or config
            await asyncio.sleep(config.batches.poll_seconds)

    async def _ended(self, api: BatchApi, config: Config) -> dict[str, Any]:
        """The provider batch's state once it ended; it is cancelled once this batch is
        cancelled, expired or erased."""
        cancelled = False
        while True:
            try:
                state = await api.state(self.native_batch)
                if api.ended(state):
                    return state
                if not cancelled and await self._stopping():
                    await api.cancel(self.native_batch)
                    cancelled = True
            except ProviderError as error:
                logger.warning(
                    "batch %s: polling %s failed: %s", self.batch_id, self.native_batch, error
                )
            config = self.config() or config
            await asyncio.sleep(config.batches.poll_seconds)

    async def _stopping(self) -> bool:
        """Whether the batch was cancelled, erased, or reached the end of its window (its
        lines the provider batch never ran then end ``expired``)."""
        state = await in_database(records.state_of, self.batch_id)
        if state is not None and state[0] != "cancelling" and timezone.now() >= state[1]:
            self.window_ended = True
        return state is None or state[0] == "cancelling" or self.window_ended

    def _answer(self, provider: Provider, results: dict[str, LineResult] | ProviderError) -> None:
        for custom_id, (request, future) in self.gathering.calls.items():
            if future.done():
                continue
            result = results if isinstance(results, ProviderError) else results[custom_id]
            if isinstance(result, ProviderError):
                future.set_exception(result)
            elif result.unsent:
                code = "batch_cancelled" if result.unsent == "cancelled" else "batch_expired"
                future.set_exception(
                    ProviderError(499, f"The provider batch was {result.unsent} first", code=code)
                )
            elif result.body is not None:
                try:
                    future.set_result(provider.batch_reply(request, result.body))
                except ProviderError as error:
                    future.set_exception(error)
            else:
                future.set_exception(
                    ProviderError(
                        result.status, result.message, code=result.code or "upstream_error"
                    )
                )

    def _fail(self, error: Exception) -> None:
        """The calls still waiting fail with ``error`` (the run itself failed)."""
        failure = ProviderError(
            500, f"internal error: {type(error).__name__}", code="internal_error"
        )
        for _, future in self.gathering.calls.values():
            if not future.done():
                future.set_exception(failure)

    async def _line(self, line: BatchLine) -> None:
        seat = Seat(self.gathering, _custom_id(line))
        SEAT.set(seat)  # this task's own context: only its line's calls see it
        try:
            outcome = await self._outcome(line)
        finally:
            if not seat.used:
                self.gathering.arrived()
        now = timezone.now()
        unrun = UNRUN.get(outcome.error_code)
        if unrun == "cancelled" and self.window_ended:
            unrun = "expired"
        if unrun is not None:
            await in_database(records.end_unrun, line.id, unrun, now)
        else:
            await in_database(records.finish_line, line.id, outcome, now)

    async def _outcome(self, line: BatchLine) -> LineOutcome:
        while True:
            config = await self._config()
            try:
                return await run_line(self.answerer, line.body, self.caller, config, self.engine)
            except RateLimited as limited:
                await asyncio.sleep(min(max(limited.wait, 0.2), MAX_WAIT))
            except Exception as error:
                logger.exception("line %s of batch %s failed", line.number, self.batch_id)
                failure = ApiError(
                    500, f"internal error: {type(error).__name__}", code="internal_error"
                )
                return refused(self.answerer, failure, uuid.uuid4().hex)

    async def _config(self) -> Config:
        while (config := self.config()) is None:
            await asyncio.sleep(1)
        return config


def _custom_id(line: BatchLine) -> str:
    """The line's id in its provider batch (both providers' rules: letters, digits, ``-``)."""
    return f"line-{line.number}"


def by_provider(lines: Iterable[BatchLine]) -> dict[tuple[str, str], list[BatchLine]]:
    """Lines grouped by their provider and provider batch."""
    groups: dict[tuple[str, str], list[BatchLine]] = {}
    for line in lines:
        groups.setdefault((line.native_provider, line.native_batch), []).append(line)
    return groups
