"""The request context: every request carries the process runtime and its log line.

An API request (a dialect's path, ``inference.dialects.registry``) also carries its
``request.dialect``. The request is timed: the log line gets its latency and the part of
it spent in the gateway itself (not waiting on providers, ``core.upstreamclock``), which
API responses carry as ``X-Gateway-Overhead-Ms`` (for a stream: up to its first byte). An
API POST is traced (``inference.telemetry``): its server span is ``request.span``, and
once its trace is complete (the reply sent, the judges done) the spans are exported and
the request's record is kept for the admin's Requests pages, under its ``X-Request-ID``.

Request code of both apps reads what it needs from the request (``request.runtime``,
``request.log``), typed by each app's own request class (``inference.serving.context``,
``adminui.context``), so no app imports this top-level package.
"""

import asyncio
import re
import time
import uuid
from functools import partial

from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    JsonResponse,
)

from adminui.records import live
from core.asyncmiddleware import AsyncMiddleware
from core.metrics import observe_request
from core.requestlog import RequestLog
from core.upstreamclock import UpstreamClock, start_clock
from gateway import runtime
from gateway.health import PROBES
from inference.dialects.registry import dialect_of
from inference.engine import Engine
from inference.ledger.requests import record_requests
from inference.neutral.errors import ApiError
from inference.serving.dialect import Dialect
from inference.serving.serve import EventStream
from inference.telemetry.genai import server_attributes, status_attributes
from inference.telemetry.names import request_span
from inference.telemetry.spans import NO_SPAN, RequestTrace, Span
from inference.telemetry.tracing import TRACING
from inference.traffic import LiveTraffic


class RequestContextMiddleware(AsyncMiddleware):
    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        started, clock = time.perf_counter(), start_clock()
        request_id = request.headers.get("X-Request-ID", "")
        if not _REQUEST_ID.fullmatch(request_id):
            request_id = uuid.uuid4().hex
        log = RequestLog(request_id=request_id, method=request.method or "", path=request.path)
        current = runtime.current()
        request.runtime = current  # type: ignore[attr-defined]
        request.log = log  # type: ignore[attr-defined]
        dialect = dialect_of(request.path)
        request.dialect = dialect  # type: ignore[attr-defined]
        log.dialect = dialect.name if dialect is not None else ""
        if current.stopping and request.path not in PROBES:
            refused = _stopping(dialect)
            log.status, log.error = refused.status_code, "stopping"
            _finish(log, started, clock, NO_SPAN)
            return refused
        span = NO_SPAN
        if dialect is not None and request.method == "POST":
            span = request_span(
                "POST",
                request.path,
                request.headers,
                server_attributes("POST", request.path),
                partial(_traced, log, current.engine),
            )
        request.span = span  # type: ignore[attr-defined]
        traffic = None
        if dialect is not None and request.method == "POST" and dialect.live(request.path):
            traffic = current.engine.live  # batch lines give way to it (docs/batches.md)
            traffic.enter()
        try:
            response = await self.get_response(request)
        except asyncio.CancelledError:
            # The client went away before the answer (its calls are billed as it unwound):
            # the request is logged, counted and recorded all the same.
            log.status, log.error = CLIENT_CLOSED, log.error or "client_closed"
            _finish(log, started, clock, span, traffic)
            raise
        except BaseException:
            if traffic is not None:
                traffic.leave()
            raise
        response["X-Request-ID"] = request_id
        log.status, log.stream = response.status_code, response.streaming
        if dialect is not None:
            response["X-Gateway-Overhead-Ms"] = f"{_overhead_ms(started, clock):.2f}"
        if isinstance(response, EventStream):
            response.when_done(partial(_finish, log, started, clock, span, traffic))
        else:
            _finish(log, started, clock, span, traffic)
        return response


# The status a request is logged with when its client went away before the answer (as
# nginx logs it; no client ever sees it).
CLIENT_CLOSED = 499
# An X-Request-ID the client sends is kept when it is a plain token of at most 64 characters.
_REQUEST_ID = re.compile(r"[A-Za-z0-9._:-]{1,64}")


def _finish(
    log: RequestLog,
    started: float,
    clock: UpstreamClock,
    span: Span,
    traffic: LiveTraffic | None = None,
) -> None:
    if traffic is not None:
        traffic.leave()
    log.latency_ms = round((time.perf_counter() - started) * 1000, 2)
    log.overhead_ms = round(_overhead_ms(started, clock), 2)
    log.emit()
    observe_request(log)
    live.publish(log)
    if span.recording:
        span.set(status_attributes(log.status))
        if log.status >= 500:
            span.fail(log.error or str(log.status))
        span.end()


def _stopping(dialect: Dialect | None) -> HttpResponse:
    """The answer to a request the worker will not take (``gateway.server.draining``): 503, in
    the dialect's error shape on the API; its connection closes after it."""
    message = "This gateway process is stopping: send the request again (another one answers)"
    if dialect is not None:
        return dialect.error_response(ApiError(503, message, code="stopping"))
    return JsonResponse({"error": message}, status=503)


def _traced(log: RequestLog, engine: Engine, trace: RequestTrace) -> None:
    """A request's trace is complete: export it, and keep its record."""
    TRACING.export(trace)
    if TRACING.store:
        engine.writer.defer(record_requests, (log, trace))


def _overhead_ms(started: float, clock: UpstreamClock) -> float:
    return max(0.0, time.perf_counter() - started - clock.seconds) * 1000
