"""Triggers (docs/automation.md): a schedule's due minutes, a webhook's signed POSTs and
the deployment's start each fire a turn of an agent as a user; its reply is delivered
when the trigger says where.

Every process runs ``Scheduler``; a slot (a due minute, the deployment's start) is run
by the process whose lease row went in first (``leases.claim_run``), so each fires once
across processes and replicas. Minutes when no process ran are not caught up: a process
looks at the minutes from the one it started in.
"""

import asyncio
import logging
from collections.abc import Callable
from typing import Any

from django.conf import settings
from django.template import Context
from django.utils import timezone

from agents.schema import Config, TriggerConfig
from agents.validation import MESSAGE_TEMPLATES
from core.logformat import log_event
from inference.automation.delivery import deliver
from inference.automation.leases import claim_run, heartbeat, join_deployment
from inference.automation.schedule import (
    due,
    minute_now,
    minute_seconds,
    slot_of,
)
from inference.automation.turns import run_turn
from inference.database import in_database
from inference.engine import Engine
from inference.models import TriggerRun
from inference.neutral.errors import ApiError
from inference.providers.base import ProviderError

logger = logging.getLogger("gateway.automation")


def message_of(trigger: TriggerConfig, context: dict[str, Any]) -> str:
    """The trigger's message, its template rendered with ``context`` (no escaping)."""
    template = MESSAGE_TEMPLATES.from_string(trigger.message)
    return template.render(Context(context, autoescape=False))


async def fire(
    trigger: TriggerConfig,
    run_id: int,
    config: Config,
    engine: Engine,
    context: dict[str, Any],
) -> None:
    """Run the turn of a claimed run, record how it went, and deliver its reply."""
    now = timezone.now()
    await in_database(_update, run_id, status="running")
    fields: dict[str, Any]
    try:
        message = message_of(trigger, {"trigger": trigger.name, "run": run_id, **context})
        answered = await run_turn(
            config, engine, trigger.agent, trigger.user, message, f"trigger:{trigger.name}"
        )
    except (ApiError, ProviderError) as error:
        fields = {"status": "failed", "error": error.message}
    except Exception as error:
        logger.exception("trigger %s failed", trigger.name)
        fields = {"status": "failed", "error": f"internal error: {type(error).__name__}"}
    else:
        usage = answered.usage
        fields = {
            "status": "done",
            "reply": answered.reply,
            "usage": {
                "prompt_tokens": usage.prompt_tokens,
                "completion_tokens": usage.completion_tokens,
                "total_tokens": usage.total_tokens,
            },
            "cost_micro_usd": usage.cost_micro_usd,
        }
    await in_database(_update, run_id, finished_at=timezone.now(), **fields)
    log_event(
        logger, "trigger_fired", trigger=trigger.name, run=run_id, status=fields["status"],
        error=fields.get("error", ""), seconds=(timezone.now() - now).total_seconds(),
    )  # fmt: skip
    if trigger.deliver is not None and fields["status"] == "done":
        payload = {
            "trigger": trigger.name,
            "run": run_id,
            "reply": fields["reply"],
            "usage": fields["usage"],
        }
        delivered = await deliver(trigger.deliver, payload)
        await in_database(_update, run_id, delivery="delivered" if delivered else "failed")


def _update(run_id: int, **fields: Any) -> None:
    TriggerRun.objects.filter(id=run_id).update(**fields)


class Scheduler:
    """A process's look at the clock: every moment, the due minutes of the schedules
    since its last look (from the minute it started in), and at start the deployment's
    on_start triggers."""

    def __init__(
        self, config: Callable[[], Config | None], engine: Engine, spawn: Callable[..., Any]
    ) -> None:
        self.config = config
        self.engine = engine
        self.spawn = spawn  # runs a firing in the background, owned by the engine

    async def run(self) -> None:
        lease = float(settings.GATEWAY_LEASE_SECONDS)
        epoch = await in_database(join_deployment, timezone.now(), lease)
        config = self.config()
        if config is not None:
            slot = "start:" + epoch.strftime("%Y-%m-%dT%H:%M:%S.%f")
            for trigger in config.triggers:
                if trigger.on_start and len(trigger.kinds) == 1:
                    await self._claim(config, trigger, slot, {"started_at": epoch.isoformat()})
        last = minute_now() - 1  # the minute it starts in is due too (if no one ran it)
        beat = 0.0
        loop = asyncio.get_running_loop()
        while True:
            if loop.time() >= beat:
                await in_database(heartbeat, timezone.now(), lease)
                beat = loop.time() + lease / 3
            now = minute_now()
            config = self.config()
            if config is not None:
                await self._due(config, range(last + 1, now + 1))
            last = now
            await asyncio.sleep(min(1.0, minute_seconds() / 4))

    async def _due(self, config: Config, minutes: range) -> None:
        schedules = [
            trigger
            for trigger in config.triggers
            if trigger.schedule is not None and len(trigger.kinds) == 1
        ]
        for minute in minutes:
            for trigger in schedules:
                if trigger.schedule is not None and due(trigger.schedule, minute):
                    slot = slot_of(minute)
                    await self._claim(config, trigger, slot, {"due_at": slot})

    async def _claim(
        self, config: Config, trigger: TriggerConfig, slot: str, context: dict[str, Any]
    ) -> None:
        run_id = await in_database(claim_run, trigger, slot, timezone.now())
        if run_id is None:
            log_event(logger, "trigger_slot_taken", trigger=trigger.name, slot=slot)
            return
        work = fire(trigger, run_id, config, self.engine, {**context, "slot": slot})
        self.spawn(work, f"trigger {trigger.name} ({slot})")


async def fire_webhook(
    trigger: TriggerConfig, body: Any, config: Config, engine: Engine, spawn: Callable[..., Any]
) -> int:
    """A webhook's run, queued; it runs in the background."""
    run_id = await in_database(claim_run, trigger, None, timezone.now())
    assert run_id is not None  # a webhook's slot is never taken
    spawn(fire(trigger, run_id, config, engine, {"body": body}), f"webhook {trigger.name}")
    return run_id
