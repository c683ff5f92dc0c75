"""Request bodies over a size limit, refused before anything reads or parses them.

An ASGI wrapper in front of Django: Django reads a whole body before any middleware runs,
and a JSON parser would then hold all of it, several times over, on the event loop. The
limit comes from ``Content-Length``, or, without one, from the bytes as they arrive. A
refused request goes on into Django with an empty body and the limit in its scope
(``too_large``), so each surface answers it in its own error shape, logged and counted
like any other.
"""

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest

KIB = 1024
MIB = 1024 * KIB
_TOO_LARGE = "gateway.body_too_large"

type Receive = Callable[[], Any]


def too_large(request: HttpRequest) -> int | None:
    """The limit the request's body went over (in bytes), or None."""
    return getattr(request, "scope", {}).get(_TOO_LARGE)


class BodyLimitGate:
    def __init__(self, app: Any, limit: Callable[[str], int]) -> None:
        self.app = app
        self.limit = limit  # the largest body, in bytes, for a request path

    async def __call__(self, scope: dict[str, Any], receive: Receive, send: Any) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit = self.limit(scope["path"])
        length = _content_length(scope)
        if length is not None:
            if length > limit:
                await self.app({**scope, _TOO_LARGE: limit}, without_body(receive), send)
            else:
                await self.app(scope, receive, send)
            return
        received: list[dict[str, Any]] = []
        size = 0
        while True:
            message = await receive()
            received.append(message)
            if message["type"] != "http.request":
                break  # the client left: Django hears it
            size += len(message.get("body", b""))
            if size > limit:
                await self.app({**scope, _TOO_LARGE: limit}, without_body(receive), send)
                return
            if not message.get("more_body", False):
                break
        await self.app(scope, _replaying(received, receive), send)


def without_body(receive: Receive) -> Receive:
    """``receive`` as if the request had no body: the body's messages are dropped unread,
    and whatever comes after them (a disconnect) is passed on."""
    started = False

    async def receive_no_body() -> dict[str, Any]:
        nonlocal started
        if not started:
            started = True
            return {"type": "http.request", "body": b"", "more_body": False}
        while True:
            message: dict[str, Any] = await receive()
            if message["type"] != "http.request":
                return message

    return receive_no_body


def _replaying(received: list[dict[str, Any]], receive: Receive) -> Receive:
    async def replay() -> Any:
        return received.pop(0) if received else await receive()

    return replay


def _content_length(scope: dict[str, Any]) -> int | None:
    for key, value in scope.get("headers", ()):
        if key.lower() == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None
    return None
