"""A process's automation: the scheduler of its triggers and the runner of background
tasks (started with the process, stopped with the engine), and the ways in from outside:
a webhook's POST and a smoke test's run queued by the admin or the command."""

import asyncio
import json
import logging
import time
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from agents.schema import Config, SmokeTestConfig, TriggerConfig
from inference.automation.signing import Refusal, verify
from inference.automation.smoke import queue_run, run_smoke_test
from inference.automation.tasks import TaskRunner
from inference.automation.triggers import Scheduler, fire_webhook
from inference.database import in_database
from inference.engine import Engine
from inference.once import first_use

logger = logging.getLogger("gateway.automation")
RESTART_AFTER = 1.0  # seconds before a loop that failed (the database was away) starts again


@dataclass(frozen=True)
class HookAnswer:
    """202, or 401 (a signature that does not verify, or a timestamp out of its window),
    404 (no such webhook), 409 (a signature already accepted)."""

    status: int
    body: dict[str, Any]


class Automation:
    def __init__(self, config: Callable[[], Config | None], engine: Engine) -> None:
        self.config = config
        self.engine = engine

    def start(self) -> None:
        for name, loop in (
            ("scheduler", Scheduler(self.config, self.engine, self._spawn).run),
            ("task runner", TaskRunner(self.config, self.engine, self._spawn).run),
        ):
            task = asyncio.ensure_future(_kept_running(name, loop))
            self.engine.services.add(task)

    def _spawn(self, work: Coroutine[Any, Any, Any], name: str) -> None:
        self.engine.background.spawn(work, name=name)

    async def webhook(
        self,
        name: str,
        body: bytes,
        signature: str | None,
        timestamp: str | None,
    ) -> HookAnswer:
        """``name``: the path's part after /hooks/. A webhook with a secret takes signed
        bodies; one without (Coulisse's) was let in by its caller (``gateway.hooks``
        checks the credentials of ``/v1``)."""
        config = self.config()
        trigger = config.hook(name) if config is not None else None
        if config is None or trigger is None or trigger.webhook is None:
            return HookAnswer(404, {"error": f"there is no webhook named {name!r}"})
        if not trigger.webhook.secret:
            return await self._fired(trigger, body, config)
        now = time.time()
        signed = verify(trigger.webhook.secret, body, signature, timestamp, now)
        if isinstance(signed, Refusal):
            return HookAnswer(401, {"error": signed.message, "code": signed.code})
        used = f"{name} {signed.signature}"
        until = datetime.fromtimestamp(signed.replayable_until, UTC)
        if not await in_database(
            first_use, "webhook", used, until, datetime.fromtimestamp(now, UTC)
        ):
            return HookAnswer(
                409,
                {
                    "error": "this signature was accepted already: sign each call anew",
                    "code": "replayed",
                },
            )
        return await self._fired(trigger, body, config)

    async def _fired(self, trigger: TriggerConfig, body: bytes, config: Config) -> HookAnswer:
        try:
            payload: Any = json.loads(body) if body.strip() else None
        except ValueError:
            payload = body.decode(errors="replace")
        run_id = await fire_webhook(trigger, payload, config, self.engine, self._spawn)
        return HookAnswer(202, {"run": run_id})

    async def start_smoke_test(self, name: str) -> dict[str, Any] | None:
        """A queued run of the smoke test (it runs in the background), or None when there
        is no such test."""
        config = self.config()
        test = config.smoke_test(name) if config is not None else None
        if config is None or test is None:
            return None
        run_id = await in_database(queue_run, test)
        self._spawn(run_smoke_test(test, run_id, config, self.engine), f"smoke test {name}")
        return {"id": run_id, "status": "queued", "transcript": [], "scores": {}}

    async def run_smoke_test(self, test: SmokeTestConfig) -> dict[str, Any]:
        """A run of the smoke test, to its end (the command)."""
        config = self.config()
        assert config is not None
        run_id = await in_database(queue_run, test)
        return await run_smoke_test(test, run_id, config, self.engine)


async def _kept_running(name: str, loop: Callable[[], Coroutine[Any, Any, None]]) -> None:
    while True:
        try:
            await loop()
        except asyncio.CancelledError:
            raise
        except Exception:
            logger.exception("the %s failed; it starts again", name)
            await asyncio.sleep(RESTART_AFTER)
