"""The spans of a request, recorded in process (docs/telemetry.md).

A ``RequestTrace`` collects the spans of one ``/v1`` request: the server span, the
``invoke_agent`` span of the agent, a ``chat`` span per upstream attempt, an
``execute_tool`` span per tool the gateway runs, and the spans of the judges and shadow
runs that follow the reply. The same record feeds the built-in request view and, when an
exporter is on, OpenTelemetry (``inference.telemetry.tracing``).

Spans are our own small objects rather than the OpenTelemetry SDK's: a request makes
several, the SDK's cost some 60 µs each, and these cost a few. Parents are passed by hand
(``Span.child``), because a stream's spans outlive the view that opened them; only the
``traceparent`` of the span that makes an HTTP call travels in a context variable
(``Span.outgoing``, ``core.traceparent``).

While tracing is off everything is ``NO_SPAN``: its methods do nothing.
"""

import random
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from types import TracebackType
from typing import Any, Literal

from core.traceparent import sending

type SpanKind = Literal["server", "client", "internal"]
type Attributes = dict[str, Any]

_ids = random.Random()


class RequestTrace:
    """The spans of one request. ``remote_parent``: the caller's span id, when its
    ``traceparent`` came with the request; ``sampled``: whether the spans are exported.

    It is done when the request has been answered and the work after the reply (judges,
    shadows) has ended: each holds it (``hold``) until then, and ``done`` runs once the
    last lets go."""

    __slots__ = ("_done", "_holds", "remote_parent", "sampled", "spans", "trace_id")

    def __init__(
        self,
        trace_id: int | None,
        remote_parent: int | None,
        sampled: bool,
        done: Callable[["RequestTrace"], None],
    ) -> None:
        self.trace_id = trace_id if trace_id is not None else _ids.getrandbits(128)
        self.remote_parent = remote_parent
        self.sampled = sampled
        self.spans: list[Span] = []
        self._holds = 0
        self._done = done

    def root(self, name: str, attributes: Attributes | None = None) -> "Span":
        """The request's server span; the request holds the trace until it ends it."""
        self._holds += 1
        return Span(self, name, "server", None, attributes)

    def hold(self) -> Callable[[], None]:
        """Keep the trace open; the returned function lets go (once)."""
        self._holds += 1
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._release()

        return release

    def _release(self) -> None:
        self._holds -= 1
        if self._holds == 0:
            self._done(self)

    @property
    def started_ns(self) -> int:
        return self.spans[0].start_ns

    def compact(self) -> list[list[Any]]:
        """The spans as the built-in store keeps them (``inference.models.RequestRecord``):
        ``[name, kind, parent index, start µs, duration µs, error.type, attributes]``."""
        index = {id(span): number for number, span in enumerate(self.spans)}
        origin = self.started_ns
        return [
            [
                span.name,
                span.kind,
                index[id(span.parent)] if span.parent is not None else -1,
                (span.start_ns - origin) // 1000,
                ((span.end_ns or span.start_ns) - span.start_ns) // 1000,
                span.error,
                span.attributes,
            ]
            for span in self.spans
        ]


class Span:
    __slots__ = (
        "attributes",
        "end_ns",
        "error",
        "kind",
        "name",
        "parent",
        "span_id",
        "start_ns",
        "trace",
    )

    def __init__(
        self,
        trace: RequestTrace,
        name: str,
        kind: SpanKind,
        parent: "Span | None",
        attributes: Attributes | None,
    ) -> None:
        self.trace = trace
        self.name = name
        self.kind = kind
        self.span_id = _ids.getrandbits(64)
        self.parent = parent
        self.start_ns = time.time_ns()
        self.end_ns = 0
        self.attributes: Attributes = attributes if attributes is not None else {}
        self.error: str | None = None  # error.type, when the operation failed
        trace.spans.append(self)

    @property
    def recording(self) -> bool:
        return True

    def child(
        self, name: str, kind: SpanKind = "internal", attributes: Attributes | None = None
    ) -> "Span":
        return Span(self.trace, name, kind, self, attributes)

    def set(self, attributes: Mapping[str, Any]) -> None:
        self.attributes.update(attributes)

    def fail(self, error_type: str) -> None:
        self.error = error_type
        self.attributes["error.type"] = error_type

    def end(self) -> None:
        """End the span (again: nothing); the server span's end lets go of the trace."""
        if self.end_ns:
            return
        self.end_ns = time.time_ns()
        if self.parent is None:
            self.trace._release()

    def hold(self) -> Callable[[], None]:
        return self.trace.hold()

    def traceparent(self) -> str:
        flags = "01" if self.trace.sampled else "00"
        return f"00-{self.trace.trace_id:032x}-{self.span_id:016x}-{flags}"

    @contextmanager
    def outgoing(self) -> Iterator[None]:
        """HTTP requests made inside the block carry this span's ``traceparent``."""
        with sending(self.traceparent()):
            yield

    def __enter__(self) -> "Span":
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if kind is not None and self.error is None:
            self.fail(kind.__name__)
        self.end()


class _NoSpan(Span):
    """The span while tracing is off: records nothing."""

    __slots__ = ()

    def __init__(self) -> None:
        self.attributes = {}
        self.error = None

    @property
    def recording(self) -> bool:
        return False

    def child(
        self, name: str, kind: SpanKind = "internal", attributes: Attributes | None = None
    ) -> Span:
        return self

    def set(self, attributes: Mapping[str, Any]) -> None:
        pass

    def fail(self, error_type: str) -> None:
        pass

    def end(self) -> None:
        pass

    def hold(self) -> Callable[[], None]:
        return _nothing

    @contextmanager
    def outgoing(self) -> Iterator[None]:
        yield

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        pass


def _nothing() -> None:
    pass


NO_SPAN: Span = _NoSpan()
