"""The request context: every request carries the process runtime and its log line.

It also times the request: the log line gets its latency and the part of it spent in the
gateway itself (not waiting on providers, ``core.upstreamclock``), which ``/v1``
responses carry as ``X-Gateway-Overhead-Ms`` (for a stream: up to its first byte).

Request code of both apps reads what it needs from the request (``request.runtime``,
``request.log``), typed by each app's own request class (``inference.api.context``,
``adminui.context``), so no app imports this top-level package.
"""

import time
import uuid
from collections.abc import AsyncIterator
from typing import cast

from django.http import HttpRequest, HttpResponseBase, StreamingHttpResponse

from adminui.records import live
from core.asyncmiddleware import AsyncMiddleware
from core.metrics import observe_request
from core.paths import is_v1_path
from core.requestlog import RequestLog
from core.upstreamclock import UpstreamClock, start_clock
from gateway import runtime


class RequestContextMiddleware(AsyncMiddleware):
    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        started, clock = time.perf_counter(), start_clock()
        request_id = request.headers.get("X-Request-ID") or uuid.uuid4().hex
        log = RequestLog(request_id=request_id, method=request.method or "", path=request.path)
        request.runtime = runtime.current()  # type: ignore[attr-defined]
        request.log = log  # type: ignore[attr-defined]
        response = await self.get_response(request)
        response["X-Request-ID"] = request_id
        log.status, log.stream = response.status_code, response.streaming
        if is_v1_path(request.path):
            response["X-Gateway-Overhead-Ms"] = f"{_overhead_ms(started, clock):.2f}"
        if isinstance(response, StreamingHttpResponse):
            # Every stream the gateway serves is an async iterator (ASGI).
            content = cast(AsyncIterator[bytes], response.streaming_content)
            response.streaming_content = _log_when_done(content, log, started, clock)
        else:
            _finish(log, started, clock)
        return response


async def _log_when_done(
    content: AsyncIterator[bytes], log: RequestLog, started: float, clock: UpstreamClock
) -> AsyncIterator[bytes]:
    try:
        async for part in content:
            yield part
    finally:
        _finish(log, started, clock)


def _finish(log: RequestLog, started: float, clock: UpstreamClock) -> None:
    log.latency_ms = round((time.perf_counter() - started) * 1000, 2)
    log.overhead_ms = round(_overhead_ms(started, clock), 2)
    log.emit()
    observe_request(log)
    live.publish(log)


def _overhead_ms(started: float, clock: UpstreamClock) -> float:
    return max(0.0, time.perf_counter() - started - clock.seconds) * 1000
