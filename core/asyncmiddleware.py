"""Base class of the gateway's middleware: async only, like the whole request path."""

from collections.abc import Awaitable, Callable

from asgiref.sync import markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase

GetResponse = Callable[[HttpRequest], Awaitable[HttpResponseBase]]


class AsyncMiddleware:
    """Subclasses implement ``async def __call__(self, request)``."""

    async_capable = True
    sync_capable = False

    def __init__(self, get_response: GetResponse) -> None:
        self.get_response = get_response
        markcoroutinefunction(self)  # type: ignore[type-var]  # an instance, called as a coroutine
