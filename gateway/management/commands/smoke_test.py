"""``python manage.py smoke_test NAME``: run one smoke test of the config
(docs/automation.md) in this process, print its transcript and scores, and exit 1 when
it failed or a judge's mean score is below its ``min_score``."""

import asyncio
import json
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.loader import ConfigError, load_config_text
from agents.schema import Config, SmokeTestConfig
from inference.automation.service import Automation
from inference.engine import Engine


class Command(BaseCommand):
    help = "Run a smoke test of the config; exit 1 when a judge's mean score is below min_score."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("name", help="the smoke test's name")

    def handle(self, *args: object, name: str = "", **options: object) -> None:
        path = settings.GATEWAY_CONFIG
        try:
            config = load_config_text(path.read_text(encoding="utf-8"), path.parent)
        except (OSError, ConfigError) as error:
            raise CommandError(f"cannot load {path}: {error}") from error
        test = config.smoke_test(name)
        if test is None:
            known = ", ".join(item.name for item in config.smoke_tests) or "none"
            raise CommandError(f"there is no smoke test named {name!r} (the tests: {known})")
        run = asyncio.run(_run(config, test))
        for line in run["transcript"]:
            self.stdout.write(f"{line['role']}: {line['text']}")
        self.stdout.write(json.dumps({"run": run["id"], "scores": run["scores"]}, indent=2))
        if run["status"] != "done":
            raise CommandError(f"smoke test {name} failed: {run['error']}", returncode=1)
        if run["passed"] is False:
            means = ", ".join(
                f"{judge} {score['mean']:.2f}" for judge, score in run["scores"].items()
            )
            raise CommandError(
                f"smoke test {name}: a judge's mean score is below {test.min_score} ({means})",
                returncode=1,
            )
        self.stdout.write(f"smoke test {name}: passed")


async def _run(config: Config, test: SmokeTestConfig) -> dict[str, Any]:
    engine = Engine()
    await engine.start(config)
    try:
        return await Automation(lambda: config, engine).run_smoke_test(test)
    finally:
        await engine.stop()
