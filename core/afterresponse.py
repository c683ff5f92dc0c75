"""Work that starts once the response has gone out: "after the reply" really is after.

The ASGI entry point opens a scope around each request; code handling the request
defers callables to it, and they run when the response (a stream included) has been
sent. Outside such a scope (a management command, a test calling code directly) a
deferred callable runs at once.
"""

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar

_deferred: ContextVar[list[Callable[[], None]] | None] = ContextVar("deferred", default=None)
_open_scopes = 0


def after_response(start: Callable[[], None]) -> None:
    pending = _deferred.get()
    if pending is None:
        start()
    else:
        pending.append(start)


def responses_in_progress() -> int:
    """Requests whose deferred work has not started yet (shutdown waits for them: a
    request cancelled by the server still starts what it deferred)."""
    return _open_scopes


@contextmanager
def response_scope() -> Iterator[None]:
    global _open_scopes
    pending: list[Callable[[], None]] = []
    token = _deferred.set(pending)
    _open_scopes += 1
    try:
        yield
    finally:
        _open_scopes -= 1
        _deferred.reset(token)
        for start in pending:
            start()
