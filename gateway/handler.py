"""Django's ASGI handler, without a thread made for each ``/v1`` request.

Django runs every request in a ``ThreadSensitiveContext``: the first thread-sensitive
``sync_to_async`` call of the request (the ``request_started`` signal's receivers, the
response's ``close``) starts a new thread for it. ``/v1`` does its own synchronous work on
the shared pool (``inference.ledger.database``), so its few thread-sensitive calls go to the
process's one long-lived thread instead; the admin keeps a thread per request.

The receivers Django connects to ``request_started`` (``close_old_connections``,
``reset_queries``) act on the connections of the thread they run on, a thread that makes
no queries of its own here: they are disconnected, which saves every request a thread
hop. Connections are checked where they are used (``inference.ledger.database``), and
``request_finished`` still closes those of the admin's request threads.

A ``/v1`` request passes through ``settings.V1_MIDDLEWARE`` only, not the admin's
middleware: each layer is a coroutine, and the admin's (sessions, CSRF, htmx, its errors,
login and guard) look at every request only to let a ``/v1`` one through.
"""

from typing import Any

import django
from django.conf import settings
from django.core.handlers.asgi import ASGIHandler
from django.core.signals import request_started
from django.db import close_old_connections, reset_queries

from core.paths import is_v1_path


class V1Handler(ASGIHandler):
    """Django's handler with the middleware of ``settings.V1_MIDDLEWARE``."""

    def load_middleware(self, is_async: bool = False) -> None:
        # Django builds the chain from settings.MIDDLEWARE: it is that list while this
        # handler is made, once, at start-up.
        everything = settings.MIDDLEWARE
        settings.MIDDLEWARE = settings.V1_MIDDLEWARE
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = everything


class GatewayASGIHandler(ASGIHandler):
    def __init__(self) -> None:
        super().__init__()
        self.v1 = V1Handler()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and is_v1_path(scope["path"]):
            await self.v1.handle(scope, receive, send)
        else:
            await super().__call__(scope, receive, send)


def get_asgi_application() -> GatewayASGIHandler:
    """``django.core.asgi.get_asgi_application`` with the gateway's handler."""
    django.setup(set_prefix=False)
    request_started.disconnect(close_old_connections)
    request_started.disconnect(reset_queries)
    return GatewayASGIHandler()
