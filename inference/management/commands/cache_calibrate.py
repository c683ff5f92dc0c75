"""``python manage.py cache_calibrate AGENT [--limit N] [--judge NAME]``: how a semantic
cache's ``similarity`` would do on the agent's recorded questions (docs/caching.md,
"Calibration"), judged by the agent's first judge or ``--judge``; a row per threshold,
then a suggested ``similarity``. Its calls are billed to the agent as kind
``evaluation``."""

import asyncio
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.schema import AgentConfig, Config, JudgeConfig
from inference.engine import Engine
from inference.evaluations.calibration import CalibrationError, Row, calibrate, suggested
from inference.management.commands.evaluate import read_config


class Command(BaseCommand):
    help = "Judge pairs of an agent's recorded questions near its semantic cache's threshold."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("agent", help="an agent with cache: {mode: semantic}")
        parser.add_argument(
            "--limit", type=int, default=200, help="the newest recorded questions (1 to 1000)"
        )
        parser.add_argument("--judge", help="the judge (default: the agent's first)")

    def handle(self, *args: object, **options: Any) -> None:
        config = read_config(settings.GATEWAY_CONFIG)
        agent = config.agent(str(options["agent"]))
        if agent is None:
            raise CommandError(f"no agent {options['agent']}", returncode=2)
        if agent.cache is None or agent.cache.mode != "semantic":
            raise CommandError(f"agent {agent.name} has no semantic cache", returncode=2)
        judge = _judge(config, agent, options["judge"])
        limit = int(options["limit"])
        if not 1 <= limit <= 1000:
            raise CommandError("--limit is 1 to 1000", returncode=2)
        try:
            rows = asyncio.run(self._calibrate(agent, judge, limit, config))
        except CalibrationError as error:
            raise CommandError(str(error), returncode=1) from error
        self.stdout.write(calibration_table(rows, agent.cache.similarity))

    async def _calibrate(
        self, agent: AgentConfig, judge: JudgeConfig, limit: int, config: Config
    ) -> list[Row]:
        engine = Engine()
        await engine.start(config)
        try:
            return await calibrate(agent, judge, limit, config, engine)
        finally:
            await engine.stop()


def calibration_table(rows: list[Row], similarity: float) -> str:
    """The rows, then the suggested ``similarity`` (no pair judged: the one set)."""
    pairs = rows[0].pairs if rows else 0
    lines = [f"{pairs} pairs judged", "similarity  would-be hits  false hits"]
    lines += [
        f"{row.threshold:.2f}        {100 * row.hit_rate:5.1f}%         "
        f"{100 * row.false_hit_rate:5.1f}%  ({row.hits} hits, {row.false_hits} false)"
        for row in rows
    ]
    if pairs:
        lines.append(f"suggested similarity: {suggested(rows):.2f}")
    else:
        lines.append(f"suggested similarity: {similarity:.2f} (no pair near it to judge)")
    return "\n".join(lines)


def _judge(config: Config, agent: AgentConfig, named: str | None) -> JudgeConfig:
    name = named or (agent.judges[0] if agent.judges else None)
    if name is None:
        raise CommandError(f"agent {agent.name} has no judge: name one with --judge", returncode=2)
    judge = config.judge(name)
    if judge is None:
        raise CommandError(f"no judge {name}", returncode=2)
    return judge
