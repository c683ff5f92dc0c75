"""ASGI entry point: Django plus the process runtime (config watcher, HTTP clients).

Neither daphne nor Django speaks the ASGI lifespan protocol, so the runtime starts when
this module is imported by the server; under a lifespan-capable server (uvicorn,
granian) the shutdown message also closes the HTTP clients cleanly.
"""

import os
from typing import Any

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")

from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application

from gateway import runtime

# Static files (the admin's CSS and the vendored htmx) are served by the app itself, with
# or without DEBUG: the gateway has no web server in front of it to do it.
django_application = ASGIStaticFilesHandler(get_asgi_application())
runtime.current()


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] != "lifespan":
        await django_application(scope, receive, send)
        return
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await runtime.current().stop()
            await send({"type": "lifespan.shutdown.complete"})
            return
