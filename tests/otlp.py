"""An OTLP/HTTP trace receiver on a loopback socket: it decodes each protobuf export
(``ExportTraceServiceRequest``) as a collector does and keeps the spans for the tests."""

import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue

from tests.polling import wait_for

KINDS = {1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}


@dataclass(frozen=True)
class ReceivedSpan:
    trace_id: str
    span_id: str
    parent_id: str  # "" for a root
    name: str
    kind: str
    error: bool
    attributes: dict[str, Any]
    service: str
    start_ns: int
    end_ns: int


@dataclass
class Collector:
    spans: list[ReceivedSpan] = field(default_factory=list)
    headers: list[dict[str, str]] = field(default_factory=list)  # of each export
    _server: ThreadingHTTPServer | None = None

    @property
    def endpoint(self) -> str:
        assert self._server is not None
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def start(self) -> Self:
        collector = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers["Content-Length"]))
                if self.path != "/v1/traces":
                    self.send_error(404)
                    return
                export = ExportTraceServiceRequest.FromString(body)
                collector.headers.append(dict(self.headers))
                collector.spans.extend(_spans(export))
                reply = ExportTraceServiceResponse().SerializeToString()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(reply)))
                self.end_headers()
                self.wfile.write(reply)

            def log_message(self, *args: Any) -> None:
                pass

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def trace(self, trace_id: str) -> list[ReceivedSpan]:
        return [span for span in self.spans if span.trace_id == trace_id]

    def wait_for_trace(self, trace_id: str, names: set[str]) -> list[ReceivedSpan]:
        """The spans of a trace, once it holds a span of each name in ``names``."""
        wait_for(
            lambda: names <= {span.name for span in self.trace(trace_id)},
            f"spans {sorted(names)} of trace {trace_id}",
            seconds=15,
        )
        return self.trace(trace_id)


def _spans(export: ExportTraceServiceRequest) -> list[ReceivedSpan]:
    found = []
    for resource_spans in export.resource_spans:
        resource = {item.key: _value(item.value) for item in resource_spans.resource.attributes}
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                found.append(
                    ReceivedSpan(
                        trace_id=span.trace_id.hex(),
                        span_id=span.span_id.hex(),
                        parent_id=span.parent_span_id.hex(),
                        name=span.name,
                        kind=KINDS.get(span.kind, "unspecified"),
                        error=span.status.code == 2,
                        attributes={item.key: _value(item.value) for item in span.attributes},
                        service=str(resource.get("service.name", "")),
                        start_ns=span.start_time_unix_nano,
                        end_ns=span.end_time_unix_nano,
                    )
                )
    return found


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_value(item) for item in value.array_value.values]
    return getattr(value, which) if which else None
