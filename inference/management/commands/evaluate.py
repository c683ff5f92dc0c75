"""``python manage.py evaluate --candidates a,b --source S [--limit N] [--judges x,y]``:
an evaluation (docs/evaluations.md) run in this process, with an engine of its own, and
its summary printed as a table. It is stored like one the admin started, so the admin
shows it too."""

import asyncio
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from agents.loader import ConfigError, load_config_text
from agents.schema import Config
from inference.database import in_database
from inference.engine import Engine
from inference.evaluations import records
from inference.evaluations.runner import EvaluationRun
from inference.evaluations.spec import InvalidEvaluation, Plan, plan_of
from inference.evaluations.summary import SummaryEntry
from inference.evaluations.tasks import prepare


class Command(BaseCommand):
    help = "Replay recorded turns of an agent or experiment through candidate agents, judged."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--candidates", required=True, help="1 to 4 agents, comma-separated")
        parser.add_argument("--source", required=True, help="the agent or experiment replayed")
        parser.add_argument("--limit", type=int, default=50, help="the newest turns (1 to 1000)")
        parser.add_argument("--judges", help="comma-separated (default: the source's judges)")
        parser.add_argument("--name", help="what to call it (default: evaluate <source>)")

    def handle(self, *args: object, **options: Any) -> None:
        config = read_config(settings.GATEWAY_CONFIG)
        source = str(options["source"])
        kind = "experiment" if config.experiment(source) is not None else "agent"
        body: dict[str, Any] = {
            "name": options["name"] or f"evaluate {source}",
            "candidates": _names(options["candidates"]),
            "source": {kind: source, "limit": options["limit"]},
        }
        if options["judges"]:
            body["judges"] = _names(options["judges"])
        try:
            plan = plan_of(body, config)
        except InvalidEvaluation as error:
            for problem in error.problems:
                self.stderr.write(problem)
            raise CommandError("the evaluation cannot start", returncode=2) from error
        row, summary = asyncio.run(self._evaluate(plan, config))
        self.stdout.write(summary_table(summary))
        if row.status != "done":
            raise CommandError(f"evaluation {row.id} {row.status}: {row.error}", returncode=1)

    async def _evaluate(
        self, plan: Plan, config: Config
    ) -> tuple[records.EvaluationRow, list[SummaryEntry]]:
        engine = Engine()
        await engine.start(config)
        try:
            prepared = await prepare(plan, config)
            self.stdout.write(f"evaluation {prepared.id}: {prepared.total} cases")
            evaluation = EvaluationRun(prepared.id, plan, prepared.cases, config, engine)
            # Waited for, not awaited: a cancel from the admin cancels it, not this command.
            await asyncio.wait({asyncio.ensure_future(evaluation.run())})
            row = await in_database(records.evaluation, prepared.id, timezone.now())
            assert row is not None, "it was written above"
            return row, await in_database(records.summary_of, row)
        finally:
            await engine.stop()


def summary_table(summary: list[SummaryEntry]) -> str:
    """The summary as aligned columns: an agent a line, then each criterion's mean with its
    interval, mean cost and latency, and wins, ties and losses against the original."""
    criteria = sorted({key for entry in summary for key in entry.scores})
    lines = [["agent", *criteria, "cost_usd", "latency_ms", "win/tie/loss"]]
    for entry in summary:
        scores = [
            f"{stats.mean:.2f} [{stats.ci[0]:.2f}, {stats.ci[1]:.2f}]"
            if (stats := entry.scores.get(key)) is not None
            else "-"
            for key in criteria
        ]
        cost = f"{entry.mean_cost_usd:.6f}" if entry.mean_cost_usd is not None else "unknown"
        latency = f"{entry.mean_latency_ms:.0f}" if entry.mean_latency_ms is not None else "-"
        tally = f"{entry.win}/{entry.tie}/{entry.loss}" if entry.win is not None else "-"
        lines.append([entry.agent, *scores, cost, latency, tally])
    widths = [max(len(line[column]) for line in lines) for column in range(len(lines[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )


def read_config(path: Path) -> Config:
    try:
        return load_config_text(path.read_text(encoding="utf-8"), path.parent)
    except OSError as error:
        raise CommandError(f"cannot read {path}: {error.strerror}") from error
    except ConfigError as error:
        raise CommandError(f"{path}: {'; '.join(error.problems)}") from error


def _names(listed: str) -> list[str]:
    return [name.strip() for name in listed.split(",") if name.strip()]
