"""The export of a request's spans over OTLP/HTTP through the OpenTelemetry SDK
(docs/telemetry.md): they become the SDK's read-only spans, handed to a batch processor
whose OTLP exporter sends them from its own thread. Imported only by a process that
exports (``inference.telemetry.tracing``)."""

import os

from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor
from opentelemetry.sdk.trace.sampling import Decision, ParentBased, Sampler, TraceIdRatioBased
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import SpanContext, SpanKind, Status, StatusCode, TraceFlags

from agents.schema import TelemetryConfig
from inference.telemetry.spans import RequestTrace

_KINDS = {"server": SpanKind.SERVER, "client": SpanKind.CLIENT, "internal": SpanKind.INTERNAL}
_SCOPE = InstrumentationScope("agent-gateway")


class Exporter:
    """The SDK's batch processor and OTLP exporter, the sampler and the resource."""

    def __init__(self, url: str, config: TelemetryConfig) -> None:
        service = config.service_name or os.environ.get("OTEL_SERVICE_NAME", "agent-gateway")
        self.resource = Resource.create({"service.name": service})
        self.sampler: Sampler = (
            TracerProvider().sampler
            if "OTEL_TRACES_SAMPLER" in os.environ
            else ParentBased(TraceIdRatioBased(config.sample_rate))
        )
        headers = dict(config.headers) or None  # None: OTEL_EXPORTER_OTLP_HEADERS applies
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
