"""How long the gateway's event loop was unavailable while something else ran.

A thread polls ``/healthz`` (an async view on the same loop as ``/v1``) back to back and
keeps the longest wait. A request that blocks the loop shows up as one long poll. The
bound tests assert is generous: this is about the loop never freezing, not about speed.
"""

import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import httpx

# A poll that waited longer than this means the loop was blocked. What these tests guard
# against freezes the loop for minutes (a backtracking regex, a synchronous parse); a
# loaded 2-core CI machine has been seen to answer a poll in 2.8 s without any freeze.
LAG_BOUND_SECONDS = 10.0


@dataclass
class LagProbe:
    longest: float = 0.0
    polls: int = 0
    failures: int = 0


@contextmanager
def probing(base_url: str) -> Iterator[LagProbe]:
    probe = LagProbe()
    stop = threading.Event()
    polled = threading.Event()

    def poll() -> None:
        with httpx.Client(base_url=base_url, timeout=LAG_BOUND_SECONDS * 5) as client:
            while not stop.is_set():
                started = time.monotonic()
                try:
                    ok = client.get("/healthz").status_code == 200
                except httpx.HTTPError:
                    ok = False
                probe.longest = max(probe.longest, time.monotonic() - started)
                probe.polls += 1
                probe.failures += not ok
                polled.set()
                stop.wait(0.02)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    try:
        yield probe
        # The probed work may end before the first poll does (a fast request): that poll,
        # started while the work ran, still counts.
        polled.wait(timeout=LAG_BOUND_SECONDS * 5)
    finally:
        stop.set()
        thread.join()
