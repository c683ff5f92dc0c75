"""``python manage.py revoke_api_key ID``: revoke a key (every process refuses it within a
second; its record stays, for its spend)."""

from django.core.management.base import BaseCommand, CommandError, CommandParser
from django.utils import timezone

from inference.money.keys import revoke_key


class Command(BaseCommand):
    help = "Revoke a minted API key by its id (see list_api_keys)."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("id", type=int)

    def handle(self, *args: object, **options: object) -> None:
        key_id = int(str(options["id"]))
        key = revoke_key(key_id, timezone.now())
        if key is None:
            raise CommandError(f"there is no API key {key_id}", returncode=1)
        self.stdout.write(f"revoked {key.id} ({key.name}, {key.prefix}…)")
