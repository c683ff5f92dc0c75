"""Django's ASGI handler, without a thread made for each ``/v1`` request.

Django runs every request in a ``ThreadSensitiveContext``: the first thread-sensitive
``sync_to_async`` call of the request (the ``request_started`` signal's receivers, the
response's ``close``) starts a new thread for it. ``/v1`` does its own synchronous work on
the shared pool (``inference.database``), so its few thread-sensitive calls go to the
process's one long-lived thread instead; the admin keeps a thread per request.
"""

from typing import Any

import django
from django.core.handlers.asgi import ASGIHandler


class GatewayASGIHandler(ASGIHandler):
    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and scope["path"].startswith("/v1/"):
            await self.handle(scope, receive, send)
        else:
            await super().__call__(scope, receive, send)


def get_asgi_application() -> GatewayASGIHandler:
    """``django.core.asgi.get_asgi_application`` with the gateway's handler."""
    django.setup(set_prefix=False)
    return GatewayASGIHandler()
