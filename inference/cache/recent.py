"""The entries this process found or stored last, held in front of the database: a hit
on one costs no query. Another process's purge, erasure or forgetting reaches an entry
held here within ``FRESH_SECONDS``; this process's own at once."""

import threading
import time
from collections import OrderedDict
from dataclasses import dataclass

from inference.cache.store import Found

CAPACITY = 2048
FRESH_SECONDS = 5.0


@dataclass(frozen=True)
class _Held:
    found: Found
    agent: str
    user_id: str
    until: float  # monotonic: held no longer than this


class RecentEntries:
    def __init__(self, capacity: int = CAPACITY) -> None:
        self.capacity = capacity
        self._held: OrderedDict[str, _Held] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: str) -> Found | None:
        with self._lock:
            held = self._held.get(key)
            if held is None:
                return None
            if held.until <= time.monotonic():
                del self._held[key]
                return None
            self._held.move_to_end(key)
            return held.found

    def put(self, found: Found, agent: str, user_id: str, expires_in: float) -> None:
        until = time.monotonic() + min(FRESH_SECONDS, expires_in)
        with self._lock:
            self._held[found.key] = _Held(found, agent, user_id, until)
            self._held.move_to_end(found.key)
            while len(self._held) > self.capacity:
                self._held.popitem(last=False)

    def drop(
        self, key: str | None = None, agent: str | None = None, user_id: str | None = None
    ) -> None:
        """Forget the entry of ``key``, or every entry of ``agent`` and ``user_id``."""
        with self._lock:
            if key is not None:
                self._held.pop(key, None)
                return
            for name in [
                name
                for name, held in self._held.items()
                if (agent is None or held.agent == agent)
                and (user_id is None or held.user_id == user_id)
            ]:
                del self._held[name]


RECENT = RecentEntries()
