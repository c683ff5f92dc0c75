"""Whether requests are traced, and the export of their spans over OTLP/HTTP
(docs/telemetry.md).

Spans are recorded when the built-in store keeps them (``telemetry.store``, on by default)
or when an exporter is on: the config's ``telemetry.otlp_endpoint``, or the standard
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``. Export goes
through the OpenTelemetry SDK (``inference.telemetry.export``). Which traces are exported is the SDK's sampler's decision (a sampled incoming
``traceparent`` is followed, otherwise ``telemetry.sample_rate`` of the traces;
``OTEL_TRACES_SAMPLER`` wins when set); the built-in store keeps every request.

The process has one ``TRACING``, which follows config reloads.
"""

import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from opentelemetry import trace
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from agents.schema import TelemetryConfig
from inference.telemetry.spans import NO_SPAN, Attributes, RequestTrace, Span

if TYPE_CHECKING:
    from inference.telemetry.export import Exporter

logger = logging.getLogger("gateway.telemetry")

CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_PROPAGATOR = TraceContextTextMapPropagator()


def traces_url(config: TelemetryConfig) -> str | None:
    """Where spans are exported to (None: nowhere)."""
    if config.otlp_endpoint:
        return config.otlp_endpoint.rstrip("/") + "/v1/traces"
    if url := os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        return url
    if base := os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT"):
        return base.rstrip("/") + "/v1/traces"
    return None


class Tracing:
    def __init__(self) -> None:
        self.store = True  # the built-in store keeps each request's spans
        self.capture_content = False
        self.retention_days = 7.0
        self._exporter: Exporter | None = None
        self._applied: tuple[Any, ...] | None = None

    @property
    def exporting(self) -> bool:
        return self._exporter is not None

    @property
    def active(self) -> bool:
        return self.store or self._exporter is not None

    def apply(self, config: TelemetryConfig) -> None:
        """Follow the config's ``telemetry`` section (and the environment)."""
        self.store = config.store
        self.retention_days = config.retention_days
        self.capture_content = config.capture_content or (
            os.environ.get(CAPTURE_VARIABLE, "").lower() == "true"
        )
        url = traces_url(config)
        wanted = (
            url,
            tuple(sorted(config.headers.items())),
            config.sample_rate,
            config.service_name,
        )
        if wanted == self._applied:
            return
        self._applied = wanted
        old, self._exporter = self._exporter, None
        if url is not None:
            # The SDK (1.5 MB) and the OTLP exporter with protobuf (3.6 MB more) are loaded
            # only by a process that exports.
            from inference.telemetry.export import Exporter

            self._exporter = Exporter(url, config)
            logger.info("exporting traces to %s", url)
        if old is not None:  # it flushes what it still holds, off the event loop
            threading.Thread(target=old.shutdown, name="otel shutdown", daemon=True).start()

    def shutdown(self) -> None:
        if self._exporter is not None:
            self._exporter.shutdown()
            self._exporter = None
            self._applied = None

    def begin(
        self,
        name: str,
        headers: Mapping[str, str],
        attributes: Attributes,
        done: Callable[[RequestTrace], None],
    ) -> Span:
        """A request's server span, continuing the caller's trace when its
        ``traceparent`` came; ``done`` gets the trace once it is complete."""
        if not self.active:
            return NO_SPAN
        trace_id = remote_parent = parent = None
        if "traceparent" in headers:
            parent = _PROPAGATOR.extract(headers)
            caller = trace.get_current_span(parent).get_span_context()
            if caller.is_valid:
                trace_id, remote_parent = caller.trace_id, caller.span_id
        request = RequestTrace(trace_id, remote_parent, False, done)
        if self._exporter is not None:
            request.sampled = self._exporter.sampled(parent, request.trace_id, name)
        return request.root(name, attributes)

    def export(self, request: RequestTrace) -> None:
        if self._exporter is not None and request.sampled:
            self._exporter.export(request)


TRACING = Tracing()
