"""The long-lived parts of one server process, owned in one place.

``gateway.asgi`` creates the runtime when the server imports it and starts its async
parts on the server's event loop; request code borrows them through the request
(``request.runtime``, attached by ``gateway.middleware``).
"""

import asyncio
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import DatabaseError

from agents.revisions import RevisionRecorder
from agents.snapshot import ConfigHolder, Snapshot
from agents.watcher import ConfigWatcher
from core.logformat import log_event
from inference.engine import Engine
from inference.status import DeploymentStatus, McpServerStatus

if TYPE_CHECKING:
    from agents.schema import Config
    from inference.automation.service import Automation, HookAnswer
    from inference.evaluations.records import EvaluationRow
    from inference.evaluations.spec import Plan
    from inference.memory.store import Memory
    from inference.reconciliation.records import Reconciliation
    from inference.serving.batchline import BatchLines

logger = logging.getLogger("gateway.config")


class Runtime:
    def __init__(self, holder: ConfigHolder) -> None:
        self.holder = holder
        self.watcher = ConfigWatcher(holder)
        self.recorder = RevisionRecorder(holder)
        self.engine = Engine()
        holder.on_change = self._config_applied
        self._started: asyncio.Task[None] | None = None
        self._automation: Automation | None = None
        # The server is stopping this process (gateway.server.draining): it takes no new work.
        self.stopping = False

    def start(self) -> None:
        _recover_interrupted_writes(self.holder.path)
        self.recorder.start()
        self.holder.reload()
        self.watcher.start()

    async def started(self) -> None:
        """Start the async parts (MCP sessions) on the running loop, once."""
        if self._started is None:
            self._started = asyncio.ensure_future(self._start())
        await asyncio.shield(self._started)

    async def _start(self) -> None:
        await self.engine.start(self.holder.config)
        self.automation.start()
        self._start_daily_reconciliation()
        self._start_batches()

    def _start_daily_reconciliation(self) -> None:
        """The process's part in the day's fetch of the bills (docs/reconciliation.md)."""
        # Imported here: the runtime is imported before Django's apps (and models) load.
        from inference.reconciliation.runs import Daily

        daily = asyncio.ensure_future(Daily(lambda: self.holder.config).run())
        self.engine.services.add(daily)

    def _start_batches(self) -> None:
        """The process's runner of batches (docs/batches.md), which finds what answers
        each line through the dialects' registry."""
        # Imported here: the runtime is imported before Django's apps (and models) load.
        from inference.batches.runner import BatchRunner
        from inference.dialects.registry import batch_lines

        runner = BatchRunner(lambda: self.holder.config, self.engine, batch_lines)
        self.engine.services.add(asyncio.ensure_future(runner.run()))

    @property
    def openai_batch_lines(self) -> "dict[str, BatchLines]":
        """What answers the lines of ``/v1/batches``, by path (the dialects' registry)."""
        # Imported here: the runtime is imported before Django's apps (and models) load.
        from inference.dialects.registry import openai_batch_lines

        return openai_batch_lines()

    @property
    def automation(self) -> "Automation":
        """Triggers, background tasks, smoke tests (docs/automation.md)."""
        if self._automation is None:
            # Imported here: the runtime is imported before Django's apps (and models) load.
            from inference.automation.service import Automation

            self._automation = Automation(lambda: self.holder.config, self.engine)
        return self._automation

    async def webhook(
        self, name: str, body: bytes, signature: str | None, timestamp: str | None
    ) -> "HookAnswer":
        return await self.automation.webhook(name, body, signature, timestamp)

    async def start_smoke_test(self, name: str) -> dict[str, Any] | None:
        return await self.automation.start_smoke_test(name)

    async def reconcile(self, config: "Config") -> "tuple[bool, Reconciliation]":
        """Fetch the bills now (the admin): (False when a fetch is under way elsewhere and
        nothing was fetched, the stored rows)."""
        from inference.database import in_database
        from inference.reconciliation.records import reconciliation
        from inference.reconciliation.runs import reconcile

        fetched = await reconcile(config, "admin")
        return fetched, await in_database(reconciliation, config)

    async def stop(self) -> None:
        self.watcher.stop()
        self.recorder.stop()
        await self.engine.stop()

    def mcp_status(self) -> list[McpServerStatus]:
        return self.engine.mcp.status()

    async def remember(self, user_id: str, agent: str, text: str) -> "Memory":
        """Add a memory by hand (the admin), embedded with the live config's embedder."""
        # Imported here: the runtime is imported before Django's apps (and models) load.
        from inference.memory.by_hand import CannotRemember, add_by_hand

        config = self.holder.config
        if config is None:
            raise CannotRemember("agent", "no config is loaded")
        return await add_by_hand(config, self.engine, user_id, agent, text)

    async def start_evaluation(self, plan: "Plan", config: "Config") -> "EvaluationRow":
        """Start an evaluation (the admin) in the background of this process."""
        from inference.evaluations import tasks

        return await tasks.start(plan, config, self.engine)

    async def cancel_evaluation(self, evaluation_id: int) -> "tuple[EvaluationRow | None, bool]":
        """Cancel an evaluation, wherever it runs; its calls under way here end first."""
        from inference.evaluations import tasks

        return await tasks.cancel(evaluation_id)

    def deployment_status(self) -> list[DeploymentStatus]:
        config = self.holder.config
        return self.engine.circuits.status(config) if config is not None else []

    def _config_applied(self, snapshot: Snapshot) -> None:
        self.recorder.notify(snapshot)
        self.engine.config_applied(snapshot.config)


def _recover_interrupted_writes(path: Path) -> None:
    # Imported here: the store imports the models, and this module is imported by
    # gateway.asgi before Django has loaded its apps.
    from agents import store

    try:
        recovered = store.recover_interrupted_writes(path)
    except store.Busy:
        return  # another process is writing: it will not leave its own file behind
    except DatabaseError as error:  # not migrated yet: nothing was recorded either
        log_event(logger, "config_recovery_skipped", logging.WARNING, error=str(error))
        return
    for leftover in recovered.temp_files:
        log_event(logger, "config_temp_file_removed", path=str(leftover))
    if recovered.dropped_revision is not None:
        log_event(logger, "config_revision_dropped", revision=recovered.dropped_revision)


_runtime: Runtime | None = None


def current() -> Runtime:
    """The process's runtime, created on first use (ASGI entry point, tests, commands)."""
    global _runtime
    if _runtime is None:
        _runtime = Runtime(ConfigHolder(settings.GATEWAY_CONFIG))
        _runtime.start()
    return _runtime
