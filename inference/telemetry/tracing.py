"""Whether requests are traced, and the export of their spans over OTLP/HTTP
(docs/telemetry.md).

Spans are recorded when the built-in store keeps them (``telemetry.store``, on by default)
or when an exporter is on: the config's ``telemetry.otlp_endpoint``, or the standard
``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` / ``OTEL_EXPORTER_OTLP_ENDPOINT``. Export goes
through the OpenTelemetry SDK: a finished request's spans become the SDK's read-only
spans, handed to a batch processor whose OTLP exporter sends them from its own thread.
Which traces are exported is the SDK's sampler's decision (a sampled incoming
``traceparent`` is followed, otherwise ``telemetry.sample_rate`` of the traces;
``OTEL_TRACES_SAMPLER`` wins when set); the built-in store keeps every request.

The process has one ``TRACING``, which follows config reloads.
"""

import logging
import os
import threading
from collections.abc import Callable, Mapping
from typing import Any

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import Decision, ParentBased, Sampler, TraceIdRatioBased
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from agents.schema import TelemetryConfig
from inference.telemetry.spans import NO_SPAN, Attributes, RequestTrace, Span

logger = logging.getLogger("gateway.telemetry")

CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
_KINDS = {"server": SpanKind.SERVER, "client": SpanKind.CLIENT, "internal": SpanKind.INTERNAL}
_SCOPE = InstrumentationScope("agent-gateway")
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


class _Exporter:
    """The SDK's batch processor and OTLP exporter, the sampler and the resource."""

    def __init__(self, url: str, config: TelemetryConfig) -> None:
        service = os.environ.get("OTEL_SERVICE_NAME", "agent-gateway")
        self.resource = Resource.create({"service.name": service})
        self.sampler: Sampler = (
            TracerProvider().sampler
            if "OTEL_TRACES_SAMPLER" in os.environ
            else ParentBased(TraceIdRatioBased(config.sample_rate))
        )
        headers = dict(config.headers) or None  # None: OTEL_EXPORTER_OTLP_HEADERS applies
        # Loaded when an exporter is configured: the exporter and protobuf take 3.6 MB that
        # a process exporting nothing does not need.
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        self.processor: SpanProcessor = BatchSpanProcessor(
            OTLPSpanExporter(endpoint=url, headers=headers)
        )

    def sampled(self, parent: Context | None, trace_id: int, name: str) -> bool:
        result = self.sampler.should_sample(parent, trace_id, name, SpanKind.SERVER)
        return result.decision is Decision.RECORD_AND_SAMPLE

    def export(self, request: RequestTrace) -> None:
        flags = TraceFlags(TraceFlags.SAMPLED)
        remote = None
        if request.remote_parent is not None:
            remote = SpanContext(request.trace_id, request.remote_parent, True, flags)
        contexts = {
            id(span): SpanContext(request.trace_id, span.span_id, False, flags)
            for span in request.spans
        }
        for span in request.spans:
            parent = contexts[id(span.parent)] if span.parent is not None else remote
            self.processor.on_end(
                ReadableSpan(
                    name=span.name,
                    context=contexts[id(span)],
                    parent=parent,
                    resource=self.resource,
                    attributes=span.attributes,
                    kind=_KINDS[span.kind],
                    status=Status(StatusCode.ERROR if span.error else StatusCode.UNSET),
                    start_time=span.start_ns,
                    end_time=span.end_ns or span.start_ns,
                    instrumentation_scope=_SCOPE,
                )
            )

    def shutdown(self) -> None:
        self.processor.shutdown()


class Tracing:
    def __init__(self) -> None:
        self.store = True  # the built-in store keeps each request's spans
        self.capture_content = False
        self.retention_days = 7.0
        self._exporter: _Exporter | None = None
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
        wanted = (url, tuple(sorted(config.headers.items())), config.sample_rate)
        if wanted == self._applied:
            return
        self._applied = wanted
        old, self._exporter = self._exporter, None
        if url is not None:
            self._exporter = _Exporter(url, config)
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
