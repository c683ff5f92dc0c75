"""``core`` as an installed app (``core.environment.apps.CoreConfig``): its system checks,
which ``manage.py check`` runs, and ``manage.py serve`` before it starts."""

from django.apps import AppConfig
from django.core import checks

from core.environment import pthfiles


class CoreConfig(AppConfig):
    name = "core"

    def ready(self) -> None:
        checks.register(pthfiles.check, checks.Tags.security)
