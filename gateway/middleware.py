"""Request id and the one log line per request (written when a stream ends, for streams)."""

import time
import uuid
from collections.abc import AsyncIterator

from django.http import HttpRequest, HttpResponseBase

from gateway.asyncmiddleware import AsyncMiddleware
from gateway.requestlog import RequestLog


class RequestLogMiddleware(AsyncMiddleware):
    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        started = time.perf_counter()
        request_id = request.headers.get("X-Request-ID") or uuid.uuid4().hex
        log = RequestLog(request_id=request_id, method=request.method or "", path=request.path)
        request.gateway_log = log  # type: ignore[attr-defined]
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
