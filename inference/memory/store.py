"""Memories in the database, and one user's of one agent held in process as a matrix for
similarity (docs/memory.md). Every function runs on a database thread (``in_database``).

Recall reads one user's memories of one agent and one embedder: their vectors are kept
in process, normalized, and reused while the rows' count and newest id are unchanged
(one indexed aggregate per recall), so a user with thousands of memories is not read
from the database on every turn, and a memory added or removed by any process is seen
on the next one.

numpy is imported on the first recall: a process whose agents keep no memory never
loads it (about 19 MB and 0.1 s of start-up).
"""

import threading
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING

from django.db.models import Count, Max

from core.float32 import packed
from inference.models import Memory as Memory  # the row, for the admin

if TYPE_CHECKING:
    import numpy as np

CACHE_BYTES = 64 * 1024 * 1024  # of vectors held in process, over all users
MAX_MEMORY_CHARACTERS = 500  # of one memory: a longer "fact" is not kept
type Vector = Sequence[float] | np.ndarray


@dataclass(frozen=True)
class Shelf:
    """One user's memories of one agent from one embedder, oldest first."""

    version: tuple[int, int | None]  # (how many rows, the newest id)
    ids: tuple[int, ...]
    texts: tuple[str, ...]
    matrix: "np.ndarray"  # one normalized float32 row per memory

    def nearest(self, query: Vector, count: int) -> list[tuple[str, float]]:
        """The ``count`` memories most similar to ``query`` (cosine), most similar first."""
        import numpy as np

        if not self.ids or self.matrix.shape[1] != len(query):
            return []
        similarity = self.matrix @ _normalized(np.asarray(query, dtype=np.float32))
        count = min(count, len(self.ids))
        best = np.argpartition(-similarity, count - 1)[:count]
        ranked = best[np.argsort(-similarity[best])]
        return [(self.texts[index], float(similarity[index])) for index in ranked]

    def most_similar(self, query: Vector) -> float:
        """The highest similarity of ``query`` to a memory (0 when there is none)."""
        found = self.nearest(query, 1)
        return found[0][1] if found else 0.0


_shelves: OrderedDict[tuple[str, str, str], Shelf] = OrderedDict()
_lock = threading.Lock()


def shelf(user_id: str, agent: str, embedder: str) -> Shelf:
    rows = Memory.objects.filter(user_id=user_id, agent=agent, embedder=embedder)
    counted = rows.aggregate(count=Count("id"), newest=Max("id"))
    version = (counted["count"], counted["newest"])
    key = (user_id, agent, embedder)
    with _lock:
        cached = _shelves.get(key)
        if cached is not None and cached.version == version:
            _shelves.move_to_end(key)
            return cached
    loaded = _load(version, list(rows.order_by("id").values_list("id", "text", "vector")))
    with _lock:
        _shelves[key] = loaded
        _shelves.move_to_end(key)
        while sum(item.matrix.nbytes for item in _shelves.values()) > CACHE_BYTES:
            if len(_shelves) == 1:
                break
            _shelves.popitem(last=False)
    return loaded


def memory_line(text: str) -> str | None:
    """A memory as it is kept: one line of plain text (white space, newlines included,
    collapsed), at most ``MAX_MEMORY_CHARACTERS`` (None: nothing to keep). Memories
    reach later system prompts: a fact may not bring structure of its own there."""
    line = " ".join(text.split())
    return line if 0 < len(line) <= MAX_MEMORY_CHARACTERS else None


def add_memories(
    user_id: str,
    agent: str,
    embedder: str,
    facts: Sequence[tuple[str, Vector]],
    source: str,
    now: datetime,
) -> list[Memory]:
    return Memory.objects.bulk_create(
        Memory(
            user_id=user_id,
            agent=agent,
            text=text,
            embedder=embedder,
            vector=packed(vector),
            source=source,
            created_at=now,
        )
        for text, vector in facts
    )


def memories_before(
    user_id: str | None, agent: str | None, before: int | None, limit: int
) -> list[Memory]:
    """A page of memories, newest first (``before``: an id, for the next page)."""
    rows = Memory.objects.defer("vector").order_by("-id")
    if user_id:
        rows = rows.filter(user_id=user_id)
    if agent:
        rows = rows.filter(agent=agent)
    if before is not None:
        rows = rows.filter(id__lt=before)
    return list(rows[:limit])


def delete_memory(memory_id: int) -> bool:
    deleted, _ = Memory.objects.filter(id=memory_id).delete()
    return bool(deleted)


def _load(
    version: tuple[int, int | None], rows: list[tuple[int, str, bytes | memoryview]]
) -> Shelf:
    """The rows whose vectors have the newest row's size (an embedder whose
    ``dimensions`` changed leaves older vectors that cannot be compared)."""
    import numpy as np

    vectors = [np.frombuffer(bytes(vector), dtype="<f4") for _, _, vector in rows]
    size = len(vectors[-1]) if vectors else 0
    kept = [index for index, vector in enumerate(vectors) if len(vector) == size]
    matrix = (
        np.stack([vectors[index] for index in kept])
        if kept
        else np.zeros((0, size), dtype=np.float32)
    )
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = matrix / np.where(norms == 0, 1, norms)
    return Shelf(
        version,
        tuple(rows[index][0] for index in kept),
        tuple(rows[index][1] for index in kept),
        matrix.astype(np.float32, copy=False),
    )


def _normalized(vector: "np.ndarray") -> "np.ndarray":
    norm = float((vector @ vector) ** 0.5)
    return vector / norm if norm else vector
