"""The ``traceparent`` an outgoing HTTP request carries: set by the span that makes the
call (``inference.telemetry.spans``), read where the request's headers are built (the
provider clients, the MCP client), so the callee joins the caller's trace."""

from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_outgoing: ContextVar[str | None] = ContextVar("traceparent", default=None)


@contextmanager
def sending(traceparent: str) -> Iterator[None]:
    """HTTP requests made inside the block carry ``traceparent``."""
    token = _outgoing.set(traceparent)
    try:
        yield
    finally:
        _outgoing.reset(token)


def outgoing_headers() -> dict[str, str]:
    """The ``traceparent`` header for an HTTP request made now (none outside a span)."""
    value = _outgoing.get()
    return {"traceparent": value} if value is not None else {}
