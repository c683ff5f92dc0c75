"""Waiting in tests for what a server does in its own time (a reload, a write behind a
reply): polled, with a deadline far above the usual, never a fixed sleep."""

import time
from collections.abc import Callable


def wait_for[T](condition: Callable[[], T], what: str, seconds: float = 20) -> T:
    """``condition()``'s first truthy result; an AssertionError naming ``what`` if none
    comes within ``seconds``."""
    deadline = time.monotonic() + seconds
    while True:
        result = condition()
        if result:
            return result
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.05)
