"""What the admin shows of automation (``/admin/triggers``, ``/admin/smoke-tests``):
read-only queries, synchronous ORM code, and the run of a smoke test queued by hand."""

from datetime import datetime
from typing import Any

from agents.schema import Config
from inference.automation.schedule import next_fire_at
from inference.models import SmokeRun, TriggerRun

RUNS_SHOWN = 20


def trigger_runs(name: str, limit: int = RUNS_SHOWN) -> list[dict[str, Any]]:
    rows = TriggerRun.objects.filter(trigger=name).order_by("-id")[:limit]
    return [
        {
            "id": row.id,
            "status": row.status,
            "reply": row.reply,
            "cost_usd": row.cost_micro_usd / 1e6 if row.cost_micro_usd is not None else None,
            "created_at": row.created_at,
            "error": row.error,
            "delivery": row.delivery,
        }
        for row in rows
    ]


def triggers(config: Config) -> list[dict[str, Any]]:
    """Every configured trigger with when it fires next (schedules) and its last runs."""
    shown = []
    for trigger in config.triggers:
        following: datetime | None = None
        if trigger.schedule is not None:
            following = next_fire_at(trigger.schedule)
        shown.append(
            {
                "name": trigger.name,
                "agent": trigger.agent,
                "user": trigger.user,
                "kind": trigger.kind,
                "next_fire_at": following,
                "runs": trigger_runs(trigger.name),
            }
        )
    return shown


def smoke_run(row: SmokeRun) -> dict[str, Any]:
    return {
        "id": row.id,
        "test": row.test,
        "status": row.status,
        "transcript": row.transcript,
        "scores": row.scores,
        "passed": row.passed,
        "error": row.error,
        "created_at": row.created_at,
    }


def smoke_tests(config: Config) -> list[dict[str, Any]]:
    """Every configured smoke test with its last runs."""
    return [
        {
            "name": test.name,
            "agent": test.agent,
            "persona": test.persona_name,
            "turns": test.turns,
            "stop_marker": test.stop_marker,
            "repetitions": test.repetitions,
            "judges": test.judges,
            "min_score": test.min_score,
            "runs": [
                smoke_run(row)
                for row in SmokeRun.objects.filter(test=test.name).order_by("-id")[:RUNS_SHOWN]
            ],
        }
        for test in config.smoke_tests
    ]
