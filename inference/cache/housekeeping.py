"""Expired and least recently used entries leave the database in the background, at most
once a minute per process (a store is what makes the table grow)."""

import threading
import time

from django.utils import timezone

from inference.cache.store import housekeep
from inference.database import in_database

EVERY_SECONDS = 60.0


class _Throttle:
    def __init__(self) -> None:
        self.last = float("-inf")
        self.lock = threading.Lock()

    def due(self) -> bool:
        """Whether it is time again (and claims it)."""
        with self.lock:
            now = time.monotonic()
            if now - self.last < EVERY_SECONDS:
                return False
            self.last = now
            return True


housekeeping_due = _Throttle().due


async def keep_cache(max_entries: int) -> None:
    await in_database(housekeep, max_entries, timezone.now())
