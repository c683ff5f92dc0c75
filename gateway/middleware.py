"""The request context: every request carries the process runtime and its log line.

Request code of both apps reads what it needs from the request (``request.runtime``,
``request.log``), typed by each app's own request class (``inference.context``,
``adminui.context``), so no app imports this top-level package.
"""

import time
import uuid
from collections.abc import AsyncIterator

from django.http import HttpRequest, HttpResponseBase

from core.asyncmiddleware import AsyncMiddleware
from core.requestlog import RequestLog
from gateway import runtime


class RequestContextMiddleware(AsyncMiddleware):
    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        started = time.perf_counter()
        request_id = request.headers.get("X-Request-ID") or uuid.uuid4().hex
        log = RequestLog(request_id=request_id, method=request.method or "", path=request.path)
        request.runtime = runtime.current()  # type: ignore[attr-defined]
        request.log = log  # type: ignore[attr-defined]
        response = await self.get_response(request)
        response["X-Request-ID"] = request_id
        log.status = response.status_code
        if response.streaming:
            response.streaming_content = _log_when_done(response.streaming_content, log, started)  # type: ignore[attr-defined]
        else:
            _finish(log, started)
        return response


async def _log_when_done(
    content: AsyncIterator[bytes], log: RequestLog, started: float
) -> AsyncIterator[bytes]:
    try:
        async for part in content:
            yield part
    finally:
        _finish(log, started)


def _finish(log: RequestLog, started: float) -> None:
    log.latency_ms = round((time.perf_counter() - started) * 1000, 2)
    log.emit()
