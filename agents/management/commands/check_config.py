"""``python manage.py check_config [PATH]``: print every problem of a config file."""

from pathlib import Path

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from agents.loader import ConfigError, load_config_text


class Command(BaseCommand):
    help = "Validate a gateway config file (default: $GATEWAY_CONFIG or ./gateway.yaml)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path", nargs="?", help="config file to check")

    def handle(self, *args: object, path: str | None = None, **options: object) -> None:
        config_path = Path(path) if path else settings.GATEWAY_CONFIG
        try:
            text = config_path.read_text(encoding="utf-8")
        except OSError as error:
            raise CommandError(f"cannot read {config_path}: {error.strerror}") from error
        except UnicodeDecodeError as error:
            raise CommandError(
                f"{config_path} is not UTF-8 text (byte {error.start}): {error.reason}",
                returncode=1,
            ) from error
        try:
            config = load_config_text(text, config_path.parent)
        except ConfigError as error:
            for problem in error.problems:
                self.stderr.write(problem)
            raise CommandError(
                f"{config_path}: {counted(len(error.problems), 'problem')}", returncode=1
            ) from error
        for warning in config.warnings:
            self.stderr.write(f"warning: {warning}")
        self.stdout.write(
            f"{config_path}: OK ({counted(len(config.agents), 'agent')}, "
            f"{counted(len(config.experiments), 'experiment')}, "
            f"{counted(len(config.judges), 'judge')}; providers: {', '.join(config.providers)})"
        )


def counted(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
