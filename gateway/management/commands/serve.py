"""``python manage.py serve``: apply migrations, check the config, then run daphne.

The production entry point: ``daphne -b 0.0.0.0 -p 8421 gateway.asgi:application``
after ``migrate``, in one command.
"""

import os
import sys

from django.conf import settings
from django.core.management import call_command
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Migrate the database and serve the gateway with daphne."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--host", default="0.0.0.0")
        parser.add_argument("--port", default="8421")

    def handle(self, *args: object, host: str, port: str, **options: object) -> None:
        call_command("migrate", interactive=False, verbosity=0)
        call_command("check_config", str(settings.GATEWAY_CONFIG))
        self.stdout.write(f"Serving on http://{host}:{port}  (admin: /admin, API: /v1)")
        self.stdout.flush()
        daphne = [sys.executable, "-m", "daphne", "-b", host, "-p", port]
        os.execv(sys.executable, [*daphne, "gateway.asgi:application"])
