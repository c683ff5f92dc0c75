"""The process's task runner: the background tasks agents dispatched (``dispatch_task``,
``inference.tools.tasks``), each a turn of its agent as its caller (its user, the API key
whose limits it runs under, its depth), at most ``limits.tasks_concurrency`` at once in
this process.

Tasks are rows, so any process may run any of them: a process takes a queued task, or a
running one whose heartbeat is older than ``settings.GATEWAY_LEASE_SECONDS`` (the process
that ran it died), by an update that only one process can win. While a task runs, its
process renews the heartbeat. So after a restart, queued and interrupted tasks run; one
taken up ``limits.max_task_attempts`` times already fails instead ("interrupted N
times"), and one whose key was revoked or expired meanwhile fails before its next call.
"""

import asyncio
import contextlib
import logging
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from django.conf import settings
from django.db.models import Q
from django.utils import timezone

from agents.schema import Config
from core.logformat import log_event
from inference.automation.turns import run_turn
from inference.database import in_database
from inference.engine import Engine
from inference.models import AgentTask
from inference.money.keys import KeyGrant, grant_of
from inference.neutral.errors import ApiError
from inference.providers.base import ProviderError

logger = logging.getLogger("gateway.automation")


def claim_tasks(
    limit: int, now: datetime, lease: float, max_attempts: int
) -> list[tuple[AgentTask, KeyGrant | None]]:
    """Up to ``limit`` tasks this process now runs, with the key of each (None: none):
    queued ones first, then those whose process stopped renewing them. An interrupted task
    taken up ``max_attempts`` times already fails instead."""
    stale = now - timedelta(seconds=lease)
    waiting = AgentTask.objects.filter(
        Q(status="queued") | Q(status="running", heartbeat_at__lt=stale)
    ).order_by("created_at")[: limit * 2]
    claimed: list[tuple[AgentTask, KeyGrant | None]] = []
    for task in waiting:
        current = AgentTask.objects.filter(
            id=task.id, status=task.status, heartbeat_at=task.heartbeat_at
        )
        if task.status == "running" and task.attempts >= max_attempts:
            current.update(
                status="failed",
                error=f"interrupted {task.attempts} times",
                finished_at=now,
            )
            continue
        won = current.update(status="running", heartbeat_at=now, attempts=task.attempts + 1)
        if won:
            key = grant_of(task.api_key_id) if task.api_key_id is not None else None
            claimed.append((task, key))
            if len(claimed) == limit:
                break
    return claimed


def renew(task_ids: list[str], now: datetime) -> None:
    AgentTask.objects.filter(id__in=task_ids, status="running").update(heartbeat_at=now)


def _usable(task: AgentTask, key: KeyGrant | None) -> KeyGrant | None:
    """The task's key, unless the task has one that no longer exists (401, the task
    fails); each of its calls then asks whether the key is still valid."""
    if task.api_key_id is not None and key is None:
        raise ApiError(401, "The API key that dispatched the task no longer exists")
    return key


def finish(task_id: str, fields: dict[str, Any]) -> None:
    AgentTask.objects.filter(id=task_id).update(finished_at=timezone.now(), **fields)


class TaskRunner:
    def __init__(
        self, config: Callable[[], Config | None], engine: Engine, spawn: Callable[..., Any]
    ) -> None:
        self.config = config
        self.engine = engine
        self.spawn = spawn
        self.running: set[str] = set()

    async def run(self) -> None:
        lease = float(settings.GATEWAY_LEASE_SECONDS)
        wakeup = self.engine.tasks.event
        while True:
            wakeup.clear()
            config = self.config()
            if config is not None:
                if self.running:
                    await in_database(renew, list(self.running), timezone.now())
                limits = config.limits
                room = limits.tasks_concurrency - len(self.running)
                if room > 0:
                    claimed = await in_database(
                        claim_tasks, room, timezone.now(), lease, limits.max_task_attempts
                    )
                    for task, key in claimed:
                        self.running.add(task.id)
                        self.spawn(self._run(config, task, key), f"task {task.id}")
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(wakeup.wait(), timeout=lease / 3)

    async def _run(self, config: Config, task: AgentTask, key: KeyGrant | None) -> None:
        fields: dict[str, Any]
        try:
            answered = await run_turn(
                config,
                self.engine,
                task.agent,
                task.user_id,
                task.message,
                f"task:{task.id}",
                key=_usable(task, key),
                purpose="task",
                task_depth=task.depth,
            )
            fields = {"status": "done", "result": answered.reply}
        except (ApiError, ProviderError) as error:
            fields = {"status": "failed", "error": error.message}
        except Exception as error:
            logger.exception("task %s failed", task.id)
            fields = {"status": "failed", "error": f"internal error: {type(error).__name__}"}
        try:
            await in_database(finish, task.id, fields)
        finally:
            self.running.discard(task.id)
            self.engine.tasks.queued()  # room for another
        log_event(
            logger, "task_finished", task=task.id, agent=task.agent, status=fields["status"],
            error=fields.get("error", ""),
        )  # fmt: skip
