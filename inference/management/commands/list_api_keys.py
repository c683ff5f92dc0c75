"""``python manage.py list_api_keys``: every minted key, newest first (never the keys)."""

from django.core.management.base import BaseCommand
from django.utils import timezone

from inference.money.keys import keys_before, spend_of


class Command(BaseCommand):
    help = "List minted API keys: id, prefix, name, user, state and spend."

    def handle(self, *args: object, **options: object) -> None:
        rows = keys_before(None, 10**9)
        now = timezone.now()
        spend = spend_of(rows, now)
        for key in rows:
            if key.revoked_at is not None:
                state = "revoked"
            elif key.expires_at is not None and key.expires_at <= now:
                state = "expired"
            else:
                state = "active"
            self.stdout.write(
                f"{key.id}\t{key.prefix}…\t{key.name}\t{key.user_id}\t{state}\t"
                f"${spend[key.id][0] / 1e6:.6f}"
            )
