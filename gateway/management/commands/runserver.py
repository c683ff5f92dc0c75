"""``runserver`` (daphne's, for ASGI) listening on the gateway's port 8421 by default."""

from daphne.management.commands.runserver import Command as DaphneRunserver


class Command(DaphneRunserver):
    default_port = "8421"
