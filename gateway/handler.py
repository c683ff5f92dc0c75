"""Django's ASGI handler, without a thread made for each ``/v1`` request.

Django runs every request in a ``ThreadSensitiveContext``: the first thread-sensitive
``sync_to_async`` call of the request (the ``request_started`` signal's receivers, the
response's ``close``) starts a new thread for it. The API (the paths of the dialects,
``inference.dialects.registry``) does its own synchronous work on the shared pool
(``inference.database``) and closes its responses on the event loop
(``ApiHandler.handle``); the admin keeps a thread per request.

The receivers Django connects to ``request_started`` (``close_old_connections``,
``reset_queries``) act on the connections of the thread they run on, a thread that makes
no queries of its own here: they are disconnected, which saves every request a thread
hop. Connections are checked where they are used (``inference.database``), and
``request_finished`` still closes those of the admin's request threads.

An API request passes through ``settings.API_MIDDLEWARE`` only, not the admin's
middleware: each layer is a coroutine, and the admin's (sessions, CSRF, htmx, its errors,
login and guard) look at every request only to let an API one through.
"""

import asyncio
from collections.abc import Callable
from contextlib import closing
from typing import Any

import django
from django.conf import settings
from django.core.exceptions import RequestAborted
from django.core.handlers.asgi import ASGIHandler, get_script_prefix
from django.core.signals import request_finished, request_started
from django.db import close_old_connections, reset_queries
from django.urls import set_script_prefix


class ApiHandler(ASGIHandler):
    """Django's handler with the middleware of ``settings.API_MIDDLEWARE``, closing each
    response on the event loop."""

    def load_middleware(self, is_async: bool = False) -> None:
        # Django builds the chain from settings.MIDDLEWARE: it is that list while this
        # handler is made, once, at start-up.
        everything = settings.MIDDLEWARE
        settings.MIDDLEWARE = settings.API_MIDDLEWARE
        try:
            super().load_middleware(is_async)
        finally:
            settings.MIDDLEWARE = everything

    async def handle(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        """``ASGIHandler.handle`` but for the last step. Django closes the response with a
        thread-sensitive ``sync_to_async`` call: a thread hop that cost 5% of a request's
        CPU at one client. An API response has nothing to close in a thread (a stream
        is an async iterator, closed as it ends), and what ``request_finished`` runs
        (Django's connection and cache cleanup, the URLconf reset) does not block: no
        query is made on the event loop's thread, and the caches are local memory."""
        try:
            body_file = await self.read_body(receive)
        except RequestAborted:
            return
        with closing(body_file):
            set_script_prefix(get_script_prefix(scope))
            await request_started.asend(sender=self.__class__, scope=scope)
            request, error_response = self.create_request(scope, body_file)
            if request is None:  # Django answered already (a body too large, say)
                assert error_response is not None
                await self.send_response(error_response, send)
                error_response.close()
                return
            response = None
            try:
                try:
                    # As Django does: the view is cancelled if the client goes away first.
                    async with asyncio.TaskGroup() as group:
                        group.create_task(self.listen_for_disconnect(receive))
                        response = await self.run_get_response(request)
                        await self.send_response(response, send)
                        raise _Answered
                except* (_Answered, RequestAborted):
                    pass
            except BaseExceptionGroup as failures:  # one failure is raised as itself
                if len(failures.exceptions) == 1:
                    raise failures.exceptions[0] from None
                raise
            finally:
                # Closing a stream finishes its request's log and record
                # (``EventStream.when_done``), however sending it ended.
                if response is not None:
                    response.close()
            if response is None:
                await request_finished.asend(sender=self.__class__)


class _Answered(Exception):
    """Ends the task group that listens for the client's disconnect."""


class GatewayASGIHandler(ASGIHandler):
    """``is_api``: whether a path is one of the API's (a dialect's)."""

    def __init__(self, is_api: Callable[[str], bool]) -> None:
        super().__init__()
        self.api = ApiHandler()
        self.is_api = is_api

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        if scope["type"] == "http" and self.is_api(scope["path"]):
            await self.api.handle(scope, receive, send)
        else:
            await super().__call__(scope, receive, send)


def get_asgi_application() -> GatewayASGIHandler:
    """``django.core.asgi.get_asgi_application`` with the gateway's handler."""
    django.setup(set_prefix=False)
    request_started.disconnect(close_old_connections)
    request_started.disconnect(reset_queries)
    # The dialects' routes import the models: only once the apps are loaded.
    from inference.dialects.registry import dialect_of

    return GatewayASGIHandler(lambda path: dialect_of(path) is not None)
