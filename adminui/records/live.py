"""The live traffic page: each finished ``/v1`` request, pushed to open pages over a
websocket (Django Channels).

The request context middleware calls ``publish`` as a request finishes; it sends the
request's summary to one channel-layer group without making the request wait. Every open
page has a ``LiveTrafficConsumer`` in that group, which renders the summary as a table row
for htmx's ws extension to insert. The channel layer is in memory in one process, Redis
(``REDIS_URL``) when several processes serve: a page then sees every worker's requests.
"""

import asyncio
import logging
import math
import time
from datetime import UTC, datetime
from importlib import import_module
from typing import TYPE_CHECKING, Any, cast

from channels.generic.websocket import AsyncWebsocketConsumer
from channels.layers import BaseChannelLayer, get_channel_layer
from django.conf import settings
from django.http import HttpRequest
from django.http.cookie import parse_cookie
from django.template.loader import render_to_string
from django.urls import reverse
from ninja import Router
from pydantic import BaseModel

from adminui.access.auth import principal
from adminui.access.guard import refusal_of
from adminui.context import AdminRequest, AdminRuntime, admin_scope
from adminui.rendering.errors import AdminError
from adminui.rendering.negotiation import respond
from adminui.schemas import errors
from core.requestlog import RequestLog

if TYPE_CHECKING:  # loaded by Channels only when REDIS_URL is set (6.8 MB otherwise unused)
    from channels_redis.core import RedisChannelLayer

GROUP = "admin-live-traffic"
logger = logging.getLogger("gateway.live")
_sending: set[asyncio.Task[None]] = set()  # kept referenced until done
_failing = False  # the channel layer's last send failed (logged once per streak)
LOOKUP_INTERVAL = 1.0  # seconds an answer about pages open on other workers is trusted


class Audience:
    """Whether any live page is open, so that a finished request costs nothing when none is.

    Pages open on this process are counted as they connect. Under several workers (the
    Redis channel layer) a page may be open on another one: the group's size in Redis is
    then looked up, at most once a second (requests finishing meanwhile share the answer),
    instead of a send to the group (two Redis round trips) for every request.
    """

    def __init__(self) -> None:
        self.here = 0
        self._lookup: asyncio.Future[int] | None = None
        self._looked_up = -math.inf

    def known(self) -> bool | None:
        """Whether a page is open, when that is known without waiting for Redis."""
        if self.here:
            return True
        if not str(settings.CHANNEL_LAYERS["default"]["BACKEND"]).startswith("channels_redis."):
            return False
        lookup = self._lookup
        if lookup is None or not lookup.done() or lookup.cancelled() or lookup.exception():
            return None
        fresh = time.monotonic() - self._looked_up < LOOKUP_INTERVAL
        return lookup.result() > 0 if fresh else None

    async def watching(self) -> bool:
        known = self.known()
        if known is not None:
            return known
        lookup = self._lookup
        if lookup is None or lookup.done():  # none yet, stale, or failed: look up again
            self._looked_up = time.monotonic()
            lookup = self._lookup = asyncio.ensure_future(self._group_size_in_redis())
        return await asyncio.shield(lookup) > 0

    async def _group_size_in_redis(self) -> int:
        layer = cast("RedisChannelLayer", get_channel_layer())
        connection = layer.connection(layer.consistent_hash(GROUP))
        # The key channels_redis keeps the group's members under (a sorted set).
        return int(await connection.zcard(layer._group_key(GROUP)))


audience = Audience()


router = Router(tags=["live"])


class LiveOut(BaseModel):
    websocket: str  # the path of the websocket that pushes the rows (HTML fragments)


@router.get(
    "/live",
    response={200: LiveOut, **errors()},
    operation_id="live_traffic",
    url_name="live",
    summary="The live traffic page: /v1 requests appear as they finish",
)
def live(request: AdminRequest) -> Any:
    return respond(request, {"websocket": reverse("admin:live")}, "adminui/live.html")


def publish(log: RequestLog) -> None:
    """Hand a finished API request to the open live pages, in the background."""
    if not log.dialect:
        return
    if audience.known() is False:
        return
    summary = {
        "finished": datetime.now(UTC).strftime("%H:%M:%S"),
        "request_id": log.request_id,
        "agent": log.agent,
        "model": log.model,  # what a request refused before an agent was chosen asked for
        "user": log.user,
        "status": log.status,
        "stream": log.stream,
        "tokens": log.tokens,
        "latency_ms": log.latency_ms,
    }
    task = asyncio.get_running_loop().create_task(_send(summary))
    _sending.add(task)
    task.add_done_callback(_sending.discard)


async def _send(summary: dict[str, Any]) -> None:
    global _failing
    try:
        if not await audience.watching():
            return
        await cast(BaseChannelLayer, get_channel_layer()).group_send(
            GROUP, {"type": "traffic.request", **summary}
        )
    except Exception:
        if not _failing:
            logger.exception("the live traffic page misses requests: channel layer failed")
        _failing = True
    else:
        _failing = False


class LiveTrafficConsumer(AsyncWebsocketConsumer):
    """One open live page. ``runtime`` is given by the ASGI routing (``as_asgi``)."""

    def __init__(self, runtime: AdminRuntime) -> None:
        super().__init__()
        self.runtime = runtime
        self.counted = False  # in the audience (connected and accepted)

    async def connect(self) -> None:
        request = self._as_request()
        refused = refusal_of(request) is not None or not self._same_origin()
        if refused or not await _authenticated(request):
            await self.close(code=4403)
            return
        await self.channel_layer.group_add(GROUP, self.channel_name)
        audience.here += 1
        self.counted = True
        await self.accept()
        await self.send(text_data=render_to_string("adminui/_live_status.html"))

    async def disconnect(self, code: int) -> None:
        if self.counted:
            audience.here -= 1
            self.counted = False
        await self.channel_layer.group_discard(GROUP, self.channel_name)

    async def traffic_request(self, event: dict[str, Any]) -> None:
        await self.send(text_data=render_to_string("adminui/_live_row.html", {"row": event}))

    def _as_request(self) -> AdminRequest:
        """The handshake as the admin guard sees requests: client address and headers."""
        request = HttpRequest()
        request.method = "GET"
        request.path = self.scope["path"]
        client = self.scope.get("client") or ("", 0)
        request.META["REMOTE_ADDR"] = client[0]
        for name, value in self.scope["headers"]:
            key = name.decode("latin-1").upper().replace("-", "_")
            request.META[f"HTTP_{key}"] = value.decode("latin-1")
        request.COOKIES = parse_cookie(request.META.get("HTTP_COOKIE", ""))
        admin_request = cast(AdminRequest, request)
        admin_request.runtime = self.runtime
        engine = import_module(settings.SESSION_ENGINE)
        admin_request.session = engine.SessionStore(
            request.COOKIES.get(settings.SESSION_COOKIE_NAME)
        )
        return admin_request

    def _same_origin(self) -> bool:
        """A page of another site may open a websocket here (browsers do not ask first):
        the handshake's ``Origin`` must be this host's."""
        headers = dict(self.scope["headers"])
        origin = headers.get(b"origin", b"").decode("latin-1")
        host = headers.get(b"host", b"").decode("latin-1")
        return origin in (f"http://{host}", f"https://{host}")


async def _authenticated(request: AdminRequest) -> bool:
    """A websocket skips Django's middleware: with ``auth.admin``, its handshake must carry
    the admin's credentials (Basic, a bearer token, or the login session's cookie)."""
    scope = admin_scope(request)
    if scope is None:
        return True
    try:
        return await principal(request, scope) is not None
    except AdminError:
        return False
