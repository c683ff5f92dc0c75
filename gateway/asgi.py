"""ASGI entry point: Django plus the process runtime (config watcher, engine), and the
websocket of the admin's live traffic page (Django Channels, ``adminui.records.live``).

Neither daphne nor Django speaks the ASGI lifespan protocol. The runtime is created when
the server imports this module; its async parts (MCP sessions) start on the server's
event loop as soon as it runs: under daphne through the Twisted reactor, which also
stops them before shutdown, and under any server at the latest with the first request.
Lifespan-capable servers (uvicorn, granian) start and stop them through lifespan.
"""

import asyncio
import gc
import os
import sys
from typing import Any, cast

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")

from asgiref.typing import WebSocketScope
from channels.generic.websocket import AsyncWebsocketConsumer
from channels.routing import URLRouter
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.urls import path, re_path

from agents.schema import Config, FilesConfig, LimitsConfig
from agents.validation import HOOKS
from core.afterresponse import response_scope
from core.bodylimit import KIB, MIB, BodyLimitGate
from core.logformat import log_stray_output
from gateway import runtime
from gateway.handler import get_asgi_application
from gateway.server import draining

django_asgi = get_asgi_application()  # loads the apps: the imports below need them
log_stray_output()

from adminui.records.live import LiveTrafficConsumer  # noqa: E402
from gateway.server import access_log  # noqa: E402, F401  (daphne's access log: no ?key=)
from inference.api.middleware import ProxyAuthGate  # noqa: E402
from inference.dialects.registry import dialect_of  # noqa: E402

process = runtime.current()
# Static files (the admin's CSS and the vendored htmx) are served by the app itself, with
# or without DEBUG: the gateway has no web server in front of it to do it. auth.proxy is
# checked in front of Django, before it reads a request's body.
django_application = BodyLimitGate(
    ProxyAuthGate(ASGIStaticFilesHandler(django_asgi), lambda: process.holder.config),
    lambda path: body_limit(process.holder.config, path),
)


def body_limit(config: Config | None, path: str) -> int:
    """The largest body of a request to ``path``: ``limits.max_body_mb`` on the API (the
    dialects' paths), where conversations travel, and for uploads ``files.max_file_mb``
    and a MiB for the rest of the form; ``limits.webhook_max_body_kb`` on the triggers'
    webhooks; 1 MiB elsewhere (the admin's writes, and nothing else takes one)."""
    dialect = dialect_of(path)
    limits = config.limits if config is not None else LimitsConfig()
    if dialect is None:
        return int(limits.webhook_max_body_kb * KIB) if path.startswith(HOOKS) else MIB
    if dialect.uploads:
        files = config.files if config is not None else FilesConfig()
        return int(files.max_file_mb * MIB) + MIB
    return int(limits.max_body_mb * MIB)


class NoSuchWebsocket(AsyncWebsocketConsumer):
    """Refuses the handshake on any other path (without a route, Channels raises, and
    daphne logged a traceback for every such attempt)."""

    async def connect(self) -> None:
        await self.close()


websockets = URLRouter(
    [
        # The stubs of Channels expect its own pattern types; Django's are what it documents.
        path("admin/live", LiveTrafficConsumer.as_asgi(runtime=process)),  # type: ignore[list-item, arg-type]
        re_path(r"", NoSuchWebsocket.as_asgi()),  # type: ignore[list-item, arg-type]
    ]
)


async def application(scope: dict[str, Any], receive: Any, send: Any) -> None:
    if scope["type"] == "websocket":
        await process.started()
        await websockets(cast(WebSocketScope, scope), receive, send)
        return
    if scope["type"] != "lifespan":
        await process.started()
        with response_scope():  # background work of the request starts once it is sent
            await django_application(scope, receive, send)
        return
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            await process.started()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            await process.stop()
            await send({"type": "lifespan.shutdown.complete"})
            return


def _follow_twisted_reactor() -> None:
    """Under daphne: start with the reactor, and stop (background work finished or
    cancelled, MCP sessions closed) before it shuts down."""
    reactor = sys.modules.get("twisted.internet.reactor")
    if reactor is None:
        return
    from twisted.internet import defer
    from twisted.web import http

    # Twisted names no reason for 429; the status line would read "Unknown Status".
    http.RESPONSES.setdefault(429, b"Too Many Requests")

    reactor.callWhenRunning(lambda: asyncio.ensure_future(process.started()))
    draining.follow_signals(reactor, process)
    reactor.addSystemEventTrigger(
        "before",
        "shutdown",
        lambda: defer.Deferred.fromFuture(asyncio.ensure_future(process.stop())),
    )


_follow_twisted_reactor()


def _freeze_what_start_up_built() -> None:
    """The modules, the URLconf and the config built so far live as long as the process
    (over 100,000 objects): frozen, no garbage collection walks them again. Unfrozen, each
    full collection walked them all, about 100 ms of a busy worker every few seconds."""
    gc.collect()
    gc.freeze()


_freeze_what_start_up_built()
