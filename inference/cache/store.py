"""Kept replies in the database (``CachedReply``), shared by every process: found by key,
or semantically by the nearest question of one context; written with the turn that
paid for them; forgotten by purge, erasure, a bad judge score, expiry or eviction.
Every function runs on a database thread (``in_database``), writers inside the
caller's transaction where they have one."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import F

from core.float32 import packed
from inference.cache.entries import Entry, dumps, loads
from inference.cache.keys import CallKeys
from inference.models import CachedReply

# Entries of one context a semantic lookup compares, the most recently used first.
CANDIDATES = 1000


@dataclass(frozen=True)
class NewEntry:
    """A reply to keep, for the user whose request paid for it."""

    keys: CallKeys
    agent: str
    user_id: str
    entry: Entry
    ttl: int  # seconds
    vector: tuple[float, ...] | None = None  # the question's embedding (semantic mode)


@dataclass(frozen=True)
class Found:
    key: str
    entry: Entry
    similarity: float = 1.0


def find(key: str, now: datetime) -> Found | None:
    row = (
        CachedReply.objects.filter(key=key, expires_at__gt=now)
        .values_list("reply", "created_at")
        .first()
    )
    return Found(key, loads(row[0], row[1])) if row is not None else None


def nearest(context: str, vector: Sequence[float], least: float, now: datetime) -> Found | None:
    """The entry of ``context`` whose question is most similar to ``vector``, when the
    cosine similarity is at least ``least``."""
    import numpy as np

    rows = list(
        CachedReply.objects.filter(context=context, expires_at__gt=now, vector__isnull=False)
        .order_by("-used_at")
        .values_list("key", "vector", "reply", "created_at")[:CANDIDATES]
    )
    query = np.asarray(vector, dtype=np.float32)
    usable = [  # vectors of the same size: the same embedder's
        (key, bytes(stored), reply, created_at)
        for key, stored, reply, created_at in rows
        if stored is not None and len(stored) == query.nbytes
    ]
    if not usable or not query.any():
        return None
    matrix = np.stack([np.frombuffer(row[1], dtype="<f4") for row in usable])
    norms = np.linalg.norm(matrix, axis=1) * np.linalg.norm(query)
    similarity = (matrix @ query) / np.where(norms == 0, 1, norms)
    best = int(np.argmax(similarity))
    if similarity[best] < least:
        return None
    key, _, reply, created_at = usable[best]
    return Found(key, loads(reply, created_at), float(similarity[best]))


def write(stored: Sequence[NewEntry], used: Sequence[str], now: datetime) -> None:
    """Keep ``stored`` (a newer reply replaces one of the same key) and note the hits of
    ``used`` (keys)."""
    if stored:
        CachedReply.objects.bulk_create(
            [_row(item, now) for item in stored],
            update_conflicts=True,
            unique_fields=["key"],
            update_fields=["reply", "vector", "created_at", "expires_at", "used_at"],
        )
    if used:
        CachedReply.objects.filter(key__in=set(used)).update(used_at=now, hits=F("hits") + 1)


def _row(item: NewEntry, now: datetime) -> CachedReply:
    return CachedReply(
        key=item.keys.key,
        context=item.keys.context,
        agent=item.agent,
        user_id=item.user_id,
        reply=dumps(item.entry),
        vector=packed(item.vector) if item.vector is not None else None,
        created_at=item.entry.created_at,
        expires_at=item.entry.created_at + timedelta(seconds=item.ttl),
        used_at=now,
    )


def purge(agent: str | None, user_id: str | None) -> int:
    """Forget the entries of ``agent`` and of ``user_id`` (None: any); how many."""
    rows = CachedReply.objects.all()
    if agent is not None:
        rows = rows.filter(agent=agent)
    if user_id is not None:
        rows = rows.filter(user_id=user_id)
    removed, _ = rows.delete()
    return removed


def forget(key: str) -> None:
    CachedReply.objects.filter(key=key).delete()


def housekeep(max_entries: int, now: datetime) -> int:
    """Drop expired entries, then the least recently used beyond ``max_entries``; how
    many went."""
    removed, _ = CachedReply.objects.filter(expires_at__lte=now).delete()
    excess = CachedReply.objects.count() - max_entries
    if excess > 0:
        oldest = CachedReply.objects.order_by("used_at", "id").values_list("id", flat=True)
        evicted, _ = CachedReply.objects.filter(id__in=list(oldest[:excess])).delete()
        removed += evicted
    return removed
