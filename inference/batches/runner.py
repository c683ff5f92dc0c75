"""The process's batch runner: it takes the batches no live process runs, sends their
lines as requests of each batch's caller, at most ``batches.concurrency`` at once in
this process and only while fewer than ``batches.yield_above`` live requests are in
flight on it, and ends each batch with its output and error files (docs/batches.md).

A line is claimed in the database before it is sent (``inference.batches.records``), so
after a restart the lines already ended stay ended, the lines a dead process had in
flight fail as ``interrupted``, and the rest run. A line the caller's ``rpm`` or ``tpm``
refused waits and is sent again; a cancelled batch sends no new line and ends once its
lines in flight are done; a batch past ``expires_at`` ends ``expired`` the same way.
"""

import asyncio
import contextlib
import logging
import uuid
from collections.abc import Callable
from datetime import datetime
from typing import Literal

from django.conf import settings
from django.utils import timezone

from agents.schema import Config
from core.logformat import log_event
from inference.batches import records
from inference.batches.lines import LineOutcome, RateLimited, refused, run_line
from inference.batches.native import NativeRun, by_provider, native_provider
from inference.batches.results import output_lines
from inference.database import in_database
from inference.engine import Engine
from inference.files import storage
from inference.models import Batch, BatchLine, StoredFile
from inference.money.keys import grant_of
from inference.neutral.errors import ApiError
from inference.serving.batchline import BatchLines, LineCaller

logger = logging.getLogger("gateway.batches")
MAX_BATCHES = 16  # batches one process runs at once (their lines share its concurrency)
MAX_WAIT = 60.0  # seconds a rate-limited line waits at most before it is sent again
RESTART_AFTER = 1.0  # seconds before the runner's loop starts again after a failure
# What answers a batch's lines to a path (``inference.dialects.registry.batch_lines``).
type Answerers = Callable[[str], BatchLines | None]


class BatchRunner:
    def __init__(
        self, config: Callable[[], Config | None], engine: Engine, answerers: Answerers
    ) -> None:
        self.config = config
        self.engine = engine
        self.answerers = answerers
        self.running: set[str] = set()
        self.sending = 0  # lines in flight in this process
        self._room = asyncio.Event()

    async def run(self) -> None:
        """Take batches and renew the heartbeats of those it runs, until cancelled; a
        failure (the database was away) is logged and the loop starts again."""
        lease = float(settings.GATEWAY_LEASE_SECONDS)
        wakeup = self.engine.batches.event
        while True:
            wakeup.clear()
            try:
                await self._take(lease)
            except Exception:
                logger.exception("the batch runner failed; it starts again")
                await asyncio.sleep(RESTART_AFTER)
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wakeup.wait(), timeout=lease / 3)

    async def _take(self, lease: float) -> None:
        if self.config() is None:
            return
        now = timezone.now()
        if self.running:
            await in_database(records.renew, list(self.running), now)
        room = MAX_BATCHES - len(self.running)
        if room > 0:
            for batch in await in_database(records.take_batches, room, now, lease):
                self.running.add(batch.id)
                self.engine.background.spawn(self._run(batch), f"batch {batch.id}")

    async def _run(self, batch: Batch) -> None:
        try:
            await self._lines(batch)
        except Exception:
            logger.exception("batch %s stopped; it is taken up again", batch.id)
        finally:
            self.running.discard(batch.id)

    async def _lines(self, batch: Batch) -> None:
        key = await in_database(grant_of, batch.api_key_id) if batch.api_key_id else None
        caller = LineCaller(batch.user_id, key)
        in_flight: set[asyncio.Task[None]] = set()
        for run in await self._native_runs(batch, caller, key is None):
            native = asyncio.ensure_future(run.run())
            in_flight.add(native)
            native.add_done_callback(in_flight.discard)
        while True:
            config = self.config()
            if config is None:
                await asyncio.sleep(1)
                continue
            state = await in_database(records.state_of, batch.id)
            ending = _ending(state)
            if ending == "gone":  # its user was erased
                return
            if ending is not None:
                await _all_done(in_flight)
                if ending == "cancelled" or ending == "expired":
                    await in_database(records.end_unsent, batch.id, ending, timezone.now())
                await self._end(batch, ending, config)
                return
            await self._slot(config)
            lines = await in_database(records.claim_lines, batch.id, 1)
            if not lines:
                self._free()
                if in_flight:
                    await asyncio.wait(in_flight, return_when=asyncio.FIRST_COMPLETED)
                elif (
                    state is not None
                    and state[0] == "in_progress"
                    and not await in_database(records.has_unsent, batch.id)
                ):
                    await self._end(batch, "completed", config)
                    return
                continue
            [line] = lines
            task = asyncio.ensure_future(self._line(batch, line, caller, key is None))
            in_flight.add(task)
            task.add_done_callback(in_flight.discard)

    async def _native_runs(
        self, batch: Batch, caller: LineCaller, keyless: bool
    ) -> list[NativeRun]:
        """The batch's provider batches (native mode): those a process before this one
        sent, to poll, and one for each native provider of its queued lines."""
        config = self.config()
        answerer = self.answerers(batch.endpoint)
        if config is None or answerer is None:
            return []
        resumed = await in_database(records.upstream_lines, batch.id)
        if batch.api_key_id is not None and keyless:
            gone = ApiError(
                401, "The API key that created the batch no longer exists", code="invalid_api_key"
            )
            for line in resumed:
                outcome = refused(answerer, gone, uuid.uuid4().hex)
                await in_database(records.finish_line, line.id, outcome, timezone.now())
            return []  # its queued lines are refused by the gateway's loop
        queued = await in_database(records.queued_lines, batch.id)
        plan = {
            line.id: provider
            for line in queued
            if (provider := native_provider(config, answerer, line.body)) is not None
        }
        claimed = await in_database(records.claim_native, batch.id, plan) if plan else []
        return [
            NativeRun(batch.id, provider, lines, sent, caller, self.config, self.engine, answerer)
            for (provider, sent), lines in by_provider([*resumed, *claimed]).items()
        ]

    async def _slot(self, config: Config) -> None:
        """Take one of this process's ``batches.concurrency`` places for a line (every
        batch it runs shares them), once live traffic is below ``batches.yield_above``."""
        while self.sending >= config.batches.concurrency:
            self._room.clear()
            await self._room.wait()
        self.sending += 1
        try:
            await self.engine.live.below(config.batches.yield_above)
        except BaseException:
            self._free()
            raise

    def _free(self) -> None:
        self.sending -= 1
        self._room.set()

    async def _line(self, batch: Batch, line: BatchLine, caller: LineCaller, keyless: bool) -> None:
        try:
            outcome = await self._outcome(batch, line, caller, keyless)
            if outcome is None:
                await in_database(records.unclaim, line.id)
            else:
                await in_database(records.finish_line, line.id, outcome, timezone.now())
        finally:
            self._free()

    async def _outcome(
        self, batch: Batch, line: BatchLine, caller: LineCaller, keyless: bool
    ) -> LineOutcome | None:
        """The line's outcome; None when it waited on a rate limit until its batch was
        cancelled or expired (it was never sent)."""
        request_id = uuid.uuid4().hex
        answerer = self.answerers(batch.endpoint)
        if answerer is None:  # validated at creation: only a downgrade of the code comes here
            raise RuntimeError(f"no dialect answers {batch.endpoint}")
        if batch.api_key_id is not None and keyless:
            gone = ApiError(
                401, "The API key that created the batch no longer exists", code="invalid_api_key"
            )
            return refused(answerer, gone, request_id)
        while True:
            config = self.config()
            if config is None:
                await asyncio.sleep(1)
                continue
            try:
                return await run_line(answerer, line.body, caller, config, self.engine)
            except RateLimited as limited:
                await asyncio.sleep(min(max(limited.wait, 0.2), MAX_WAIT))
                if _ending(await in_database(records.state_of, batch.id)) is not None:
                    return None
            except Exception as error:
                logger.exception("line %s of batch %s failed", line.number, batch.id)
                failure = ApiError(
                    500, f"internal error: {type(error).__name__}", code="internal_error"
                )
                return refused(answerer, failure, request_id)

    async def _end(self, batch: Batch, status: str, config: Config) -> None:
        now = timezone.now()
        if status == "completed":
            await in_database(records.finalizing, batch.id, now)
        output = errors = None
        if batch.dialect == "openai":
            lines = await in_database(records.ended_lines, batch.id)
            succeeded, failed = output_lines(lines)
            output = await _saved(config, batch, "output", succeeded)
            errors = await _saved(config, batch, "error", failed)
        await in_database(
            records.end_batch, batch.id, status, timezone.now(), output, errors, batch.created_at
        )
        log_event(logger, "batch_ended", batch=batch.id, status=status)


def _ending(
    state: tuple[str, datetime] | None,
) -> Literal["gone", "cancelled", "completed", "expired"] | None:
    """How the batch ends now, by its status and the end of its window (None: it goes
    on)."""
    if state is None:
        return "gone"
    status, expires_at = state
    if status == "cancelling":
        return "cancelled"
    if status == "finalizing":
        return "completed"
    if timezone.now() >= expires_at:
        return "expired"
    return None


async def _all_done(tasks: set[asyncio.Task[None]]) -> None:
    if tasks:
        await asyncio.wait(set(tasks))


async def _saved(config: Config, batch: Batch, kind: str, data: bytes) -> StoredFile | None:
    """The output or error file written (None: it would have no line), owned by the
    batch's user, of purpose ``batch_output`` as OpenAI's both are."""
    if not data:
        return None
    row = StoredFile(
        id=f"file-{uuid.uuid4().hex[:24]}",
        user_id=batch.user_id,
        filename=f"{batch.id}_{kind}.jsonl",
        purpose="batch_output",
        media_type="application/jsonl",
        bytes=len(data),
    )
    await asyncio.to_thread(storage.save, storage.folder_of(config), row.id, data)
    return row
