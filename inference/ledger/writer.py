"""Records written in groups (group commit), owned by the engine.

Request code hands a record to the writer with the function that writes a group of such
records (``inference.turn.recording.record_turns``). One flusher writes everything
pending in one transaction, in one worker-thread call, then whatever arrived meanwhile,
until nothing is left: under load many turns share a transaction instead of paying one
each. A caller whose reply acknowledges something a later request reads (``write``)
waits for the commit of its group, so that it is in the database for every process
(budgets and history stay exact across workers); any other caller only queues its record
(``queue``) and answers at once. Records nobody waits for and nobody reads soon (the
requests' traces, ``defer``) are gathered for ``DEFER_SECONDS`` and written together: a
second's worth of them costs one statement. A group that fails is retried function by function and
record by record, so one bad record fails alone. ``stop`` writes whatever is pending
before the process exits, including the records of requests still being answered when
it was called.
"""

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from django.db import transaction

from core.afterresponse import responses_in_progress
from inference.database import in_database

# How long stop() waits for requests still being answered to hand over their records: with
# the background work's grace before it, within the time a worker gets before SIGKILL.
DRAIN_SECONDS = 8.0
# How long deferred records are gathered before they are written.
DEFER_SECONDS = 1.0

logger = logging.getLogger("gateway.ledger")

type WriteGroup = Callable[[list[Any]], None]
type Pending = list[tuple[Any, asyncio.Future[None] | None]]


class RecordWriter:
    def __init__(self) -> None:
        self._pending: dict[WriteGroup, Pending] = {}
        self._deferred: dict[WriteGroup, Pending] = {}
        self._flusher: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    async def write[T](self, write_group: Callable[[list[T]], None], record: T) -> None:
        """Queue ``record`` and wait until it is committed (the write goes on if the
        waiter is cancelled)."""
        await asyncio.shield(self.queue(write_group, record))

    def queue[T](self, write_group: Callable[[list[T]], None], record: T) -> asyncio.Future[None]:
        """Queue ``record``; the future is done once it is committed or has failed."""
        written = asyncio.get_running_loop().create_future()
        self._pending.setdefault(write_group, []).append((record, written))
        self._start()
        return written

    def defer[T](self, write_group: Callable[[list[T]], None], record: T) -> None:
        """Gather ``record`` to be written within ``DEFER_SECONDS`` (a failure is logged)."""
        self._deferred.setdefault(write_group, []).append((record, None))
        if self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(DEFER_SECONDS, self._release)

    async def stop(self, drain: float = DRAIN_SECONDS) -> None:
        """Wait up to ``drain`` seconds for the requests still being answered (a request the
        server cancels records what it spent as it ends), then until every queued record is
        written."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + drain
        while responses_in_progress() and loop.time() < deadline:
            await asyncio.sleep(0.01)
        if self._timer is not None:
            self._timer.cancel()
            self._release()
        while self._flusher is not None and not self._flusher.done():
            await asyncio.shield(self._flusher)

    @property
    def _flushing(self) -> bool:
        return self._flusher is not None and not self._flusher.done()

    def _start(self) -> None:
        if not self._flushing:
            self._flusher = asyncio.create_task(self._flush(), name="write records")

    def _release(self) -> None:
        """Hand the deferred records to the flusher."""
        self._timer = None
        for write_group, group in self._deferred.items():
            self._pending.setdefault(write_group, []).extend(group)
        self._deferred = {}
        self._start()

    async def _flush(self) -> None:
        while self._pending:
            groups, self._pending = self._pending, {}
            try:
                await in_database(_write_groups, groups)
            except Exception:
                await self._one_by_one(groups)
            else:
                for group in groups.values():
                    for _, written in group:
                        _settle(written, None)
            finally:
                # Cancelled (the loop is closing) or worse: no waiter may wait forever.
                for group in groups.values():
                    for _, written in group:
                        if written is not None:
                            _settle(written, RuntimeError("the record writer stopped"))

    async def _one_by_one(self, groups: dict[WriteGroup, Pending]) -> None:
        for write_group, group in groups.items():
            for record, written in group:
                try:
                    await in_database(_write_groups, {write_group: [(record, written)]})
                except Exception as error:
                    _settle(written, error)
                else:
                    _settle(written, None)


def _write_groups(groups: dict[WriteGroup, Pending]) -> None:
    """Write every group in one transaction."""
    with transaction.atomic():
        for write_group, group in groups.items():
            write_group([record for record, _ in group])


def _settle(written: asyncio.Future[None] | None, error: Exception | None) -> None:
    if written is None:
        if error is not None:
            logger.error("could not write a deferred record", exc_info=error)
        return
    if written.done():
        return
    if error is None:
        written.set_result(None)
    else:
        written.set_exception(error)
        written.exception()  # retrieved: the waiter may be gone (cancelled); callers log it
