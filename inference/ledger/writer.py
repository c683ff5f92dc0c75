"""Records written in groups (group commit), owned by the engine.

Request code hands a record to the writer with the function that writes a group of such
records in one transaction (``inference.turn.recording.record_turns``). One flusher writes
everything pending, one worker-thread call per function, then whatever arrived
meanwhile, until nothing is left: under load many turns share a transaction instead of
paying one each. A caller whose reply acknowledges something a later request reads
(``write``) waits for the commit of its group, so that it is in the database for every
process (budgets and history stay exact across workers); any other caller only queues its
record (``queue``) and answers at once. A group that fails is retried record by record, so
one bad record fails alone. ``stop`` writes whatever is pending before the process exits,
including the records of requests still being answered when it was called.
"""

import asyncio
from collections.abc import Callable
from typing import Any

from core.afterresponse import responses_in_progress
from inference.ledger.database import in_database

# How long stop() waits for requests still being answered to hand over their records: with
# the background work's grace before it, within the time a worker gets before SIGKILL.
DRAIN_SECONDS = 8.0

type WriteGroup = Callable[[list[Any]], None]
type Pending = list[tuple[Any, asyncio.Future[None]]]


class RecordWriter:
    def __init__(self) -> None:
        self._pending: dict[WriteGroup, Pending] = {}
        self._flusher: asyncio.Task[None] | None = None

    async def write[T](self, write_group: Callable[[list[T]], None], record: T) -> None:
        """Queue ``record`` and wait until it is committed (the write goes on if the
        waiter is cancelled)."""
        await asyncio.shield(self.queue(write_group, record))

    def queue[T](self, write_group: Callable[[list[T]], None], record: T) -> asyncio.Future[None]:
        """Queue ``record``; the future is done once it is committed or has failed."""
        written = asyncio.get_running_loop().create_future()
        self._pending.setdefault(write_group, []).append((record, written))
        if self._flusher is None or self._flusher.done():
            self._flusher = asyncio.create_task(self._flush(), name="write records")
        return written

    async def stop(self, drain: float = DRAIN_SECONDS) -> None:
        """Wait up to ``drain`` seconds for the requests still being answered (a request the
        server cancels records what it spent as it ends), then until every queued record is
        written."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + drain
        while responses_in_progress() and loop.time() < deadline:
            await asyncio.sleep(0.01)
        while self._flusher is not None and not self._flusher.done():
            await asyncio.shield(self._flusher)

    async def _flush(self) -> None:
        while self._pending:
            write_group, group = self._pending.popitem()
            try:
                await in_database(write_group, [record for record, _ in group])
            except Exception:
                for record, written in group:
                    try:
                        await in_database(write_group, [record])
                    except Exception as error:
                        _settle(written, error)
                    else:
                        _settle(written, None)
            else:
                for _, written in group:
                    _settle(written, None)
            finally:
                # Cancelled (the loop is closing) or worse: no waiter may wait forever.
                for _, written in group:
                    _settle(written, RuntimeError("the record writer stopped"))


def _settle(written: asyncio.Future[None], error: Exception | None) -> None:
    if written.done():
        return
    if error is None:
        written.set_result(None)
    else:
        written.set_exception(error)
        written.exception()  # retrieved: the waiter may be gone (cancelled); callers log it
