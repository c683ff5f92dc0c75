"""Work that runs after a reply has been sent, owned by the process.

Tasks are tracked so that shutdown can let them finish (briefly) and cancel the rest;
a failing task is logged and never reaches a client.
"""

import asyncio
import contextlib
import logging
from collections.abc import Callable, Coroutine
from typing import Any

from core.afterresponse import responses_in_progress

logger = logging.getLogger("gateway.background")


class BackgroundTasks:
    def __init__(self) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()

    def spawn(self, work: Coroutine[Any, Any, Any], name: str) -> asyncio.Task[Any]:
        task = asyncio.create_task(work, name=name)
        self._tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    @property
    def pending(self) -> int:
        return len(self._tasks)

    async def stop(self, grace: float = 5.0) -> None:
        """Wait up to ``grace`` seconds for the pending tasks, then cancel the rest.

        Requests still being answered may yet hand work over: the server cancels them as
        it shuts down, and a cancelled request still starts what it deferred. So the
        wait covers them too."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while responses_in_progress() and loop.time() < deadline:
            await asyncio.sleep(0.01)
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=max(0.0, deadline - loop.time()))
        for task in list(self._tasks):
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            logger.error("background task %s failed", task.get_name(), exc_info=task.exception())


async def releasing(work: Coroutine[Any, Any, None], release: Callable[[], None]) -> None:
    """Run ``work``, then ``release`` (what held the request's trace open for it)."""
    try:
        await work
    finally:
        release()
