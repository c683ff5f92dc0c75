"""``python manage.py create_api_key --user U --name N [...]``: mint a key; the key alone
on stdout (the only time it is shown)."""

from datetime import datetime

from django.core.management.base import BaseCommand, CommandError, CommandParser
from pydantic import ValidationError

from inference.money.keys import KeySpec, create_key


class Command(BaseCommand):
    help = "Mint an API key (sk-gw-…) for a user; prints the key, which is not kept."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--user", required=True, help="the user its requests are for")
        parser.add_argument("--name", required=True, help="what the key is for")
        parser.add_argument("--budget-usd", type=float, help="spend limit in USD")
        parser.add_argument("--window", choices=["total", "day", "month"], default="total")
        parser.add_argument("--rpm", type=int, help="requests per minute")
        parser.add_argument("--tpm", type=int, help="tokens per minute")
        parser.add_argument("--agents", help="comma-separated agents it may call (default all)")
        parser.add_argument(
            "--guardrails", help="comma-separated guardrails its requests go through"
        )
        parser.add_argument("--expires", help="ISO 8601 time it stops working")

    def handle(self, *args: object, **options: object) -> None:
        agents = str(options["agents"]).split(",") if options["agents"] else None
        guardrails = str(options["guardrails"] or "").split(",")
        try:
            expires = (
                datetime.fromisoformat(str(options["expires"])) if options["expires"] else None
            )
            spec = KeySpec(
                name=str(options["name"]),
                user=str(options["user"]),
                budget_usd=options["budget_usd"],  # type: ignore[arg-type]
                budget_window=options["window"],  # type: ignore[arg-type]
                rpm=options["rpm"],  # type: ignore[arg-type]
                tpm=options["tpm"],  # type: ignore[arg-type]
                agents=[name.strip() for name in agents if name.strip()] if agents else None,
                guardrails=[name.strip() for name in guardrails if name.strip()],
                expires_at=expires,
            )
        except (ValueError, ValidationError) as error:
            raise CommandError(str(error), returncode=2) from error
        _, secret = create_key(spec)
        self.stdout.write(secret)
