"""How long a request waited on upstream providers, to tell the gateway's own time apart.

The request context middleware starts a clock per request; the provider call layer wraps
each wait on an upstream in ``upstream_wait()``. Overlapping waits (calls made in
parallel) count once: the clock measures the time during which at least one was pending.
"""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar


class UpstreamClock:
    def __init__(self) -> None:
        self._pending = 0
        self._since = 0.0
        self._total = 0.0

    @contextmanager
    def waiting(self) -> Iterator[None]:
        if self._pending == 0:
            self._since = time.perf_counter()
        self._pending += 1
        try:
            yield
        finally:
            self._pending -= 1
            if self._pending == 0:
                self._total += time.perf_counter() - self._since

    @property
    def seconds(self) -> float:
        running = time.perf_counter() - self._since if self._pending else 0.0
        return self._total + running


_clock: ContextVar[UpstreamClock | None] = ContextVar("upstream_clock", default=None)


def start_clock() -> UpstreamClock:
    """A new clock for the request running in the current context (and its tasks)."""
    clock = UpstreamClock()
    _clock.set(clock)
    return clock


@contextmanager
def upstream_wait() -> Iterator[None]:
    """Count the enclosed wait as upstream time of the current request, if it has a clock."""
    clock = _clock.get()
    if clock is None:
        yield
        return
    with clock.waiting():
        yield
