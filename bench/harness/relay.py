"""The stack's floor: a bare Django + daphne + httpx relay to measure the gateway against.

One async view forwards the request body to the upstream with one shared
``httpx.AsyncClient`` and relays the answer: streamed replies (``text/event-stream``)
chunk by chunk as they arrive, others whole. No validation, no database, no logging.

    RELAY_UPSTREAM=http://127.0.0.1:9100/v1 .venv/bin/python -m daphne -p 9200 bench.harness.relay:application
"""

import os
from collections.abc import AsyncIterator

import django
import httpx
from django.conf import settings
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from django.urls import path

settings.configure(
    DEBUG=False,
    ALLOWED_HOSTS=["*"],
    ROOT_URLCONF=__name__,
    MIDDLEWARE=[],
    INSTALLED_APPS=[],
    DATABASES={},
    LOGGING_CONFIG=None,
)
django.setup()

UPSTREAM = os.environ.get("RELAY_UPSTREAM", "http://127.0.0.1:9100/v1").rstrip("/")
_client: httpx.AsyncClient | None = None


def client() -> httpx.AsyncClient:
    """One client for the process, created on the server's event loop."""
    global _client
    if _client is None:
        limits = httpx.Limits(max_connections=None, max_keepalive_connections=256)
        _client = httpx.AsyncClient(timeout=30, limits=limits)
    return _client


async def relay(request: HttpRequest, rest: str) -> HttpResponse | StreamingHttpResponse:
    upstream = client().build_request(
        "POST",
        f"{UPSTREAM}/{rest}",
        content=request.body,
        headers={"Content-Type": "application/json"},
    )
    response = await client().send(upstream, stream=True)
    content_type = response.headers.get("content-type", "application/json")
    if content_type.startswith("text/event-stream"):
        return StreamingHttpResponse(_chunks(response), content_type=content_type)
    body = await response.aread()
    return HttpResponse(body, status=response.status_code, content_type=content_type)


async def _chunks(response: httpx.Response) -> AsyncIterator[bytes]:
    try:
        async for chunk in response.aiter_raw():
            yield chunk
    finally:
        await response.aclose()


urlpatterns = [path("v1/<path:rest>", relay)]

from django.core.asgi import get_asgi_application  # noqa: E402  (after settings.configure)

application = get_asgi_application()
