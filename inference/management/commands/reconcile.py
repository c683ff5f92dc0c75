"""``python manage.py reconcile [--days N]``: fetch what the providers with ``billing``
billed over the last N days (default ``reconciliation.days``), store it beside what the
gateway computed, and print the table (docs/reconciliation.md). Exits 1 when a row's
drift is over ``reconciliation.alert_pct`` (for cron alerts), else 2 when a billing API
did not answer with a bill (or no provider has ``billing``), else 0."""

import asyncio
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.loader import ConfigError, load_config_text
from inference.reconciliation.records import DriftRow, reconciliation
from inference.reconciliation.runs import reconcile

MAX_DAYS = 90


class Command(BaseCommand):
    help = "Fetch the providers' bills, print them beside the gateway's figures; exit 1 on drift."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--days", type=int, help="days, today's UTC day included")

    def handle(self, *args: object, **options: Any) -> None:
        path = settings.GATEWAY_CONFIG
        try:
            config = load_config_text(path.read_text(encoding="utf-8"), path.parent)
        except (OSError, ConfigError) as error:
            raise CommandError(f"cannot load {path}: {error}") from error
        days = options["days"] or config.reconciliation.days
        if not 1 <= days <= MAX_DAYS:
            raise CommandError(f"--days: from 1 to {MAX_DAYS}, got {days}")
        if not asyncio.run(reconcile(config, "command", days)):
            self.stderr.write("a fetch is under way elsewhere: these are the figures stored")
        found = reconciliation(config, days)
        if not found.providers:
            raise CommandError(
                "no provider has billing: in the config, so there is no bill", returncode=2
            )
        self.stdout.write(table(found.rows))
        for problem in found.errors:
            self.stderr.write(f"{problem.provider}: {problem.error}")
        alert = config.reconciliation.alert_pct
        if over := [row for row in found.rows if row.flagged]:
            raise CommandError(
                f"{len(over)} row{'s' if len(over) > 1 else ''} drifted more than {alert:g} %",
                returncode=1,
            )
        if found.errors:
            raise CommandError("a billing API did not answer with a bill", returncode=2)


def table(rows: list[DriftRow]) -> str:
    """The rows as aligned columns, a flagged row marked with ``!``."""
    lines = [["provider", "day", "model", "billed_usd", "computed_usd", "drift_usd", "drift_pct"]]
    for row in rows:
        pct = "-" if row.drift_pct is None else f"{row.drift_pct:.2f}"
        lines.append(
            [
                row.provider,
                row.day.isoformat(),
                row.model,
                f"{row.billed_usd:.6f}",
                f"{row.computed_usd:.6f}",
                f"{row.drift_usd:.6f}",
                pct + (" !" if row.flagged else ""),
            ]
        )
    widths = [max(len(line[column]) for line in lines) for column in range(len(lines[0]))]
    return "\n".join(
        "  ".join(cell.ljust(width) for cell, width in zip(line, widths, strict=True)).rstrip()
        for line in lines
    )
