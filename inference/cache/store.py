"""Kept replies in the database (``CachedReply``), shared by every process: found by key,
or semantically by the nearest question of one context; written with the turn that
paid for them; forgotten by purge, erasure, a bad judge score, expiry or eviction.
Every function runs on a database thread (``in_database``), writers inside the
caller's transaction where they have one."""

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import connection

from core.float32 import Vector, packed
from inference.cache.entries import Entry, dumps, loads
from inference.cache.keys import CallKeys
from inference.models import CachedReply

# Entries of one context a semantic lookup compares, the most recently used first.
CANDIDATES = 1000
_TABLE = connection.ops.quote_name(CachedReply._meta.db_table)
_FIND = f'SELECT reply FROM {_TABLE} WHERE "key" = %s AND expires_at > %s'
_TOUCH = f'UPDATE {_TABLE} SET used_at = %s WHERE "key" IN ({{}})'
# A newer reply of the same key replaces the older one (two misses of one call at once,
# or a request with Cache-Control: no-cache). SQLite and PostgreSQL both speak this.
_UPSERT = (
    f'INSERT INTO {_TABLE} ("key", context, agent, user_id, reply, vector, created_at, '
    "expires_at, used_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s, %s) "
    'ON CONFLICT ("key") DO UPDATE SET reply = excluded.reply, vector = excluded.vector, '
    "created_at = excluded.created_at, expires_at = excluded.expires_at, "
    "used_at = excluded.used_at"
)


@dataclass(frozen=True)
class NewEntry:
    """A reply to keep, for the user whose request paid for it."""

    keys: CallKeys
    agent: str
    user_id: str
    entry: Entry
    ttl: int  # seconds
    vector: Vector | None = None  # the question's embedding (semantic mode)


@dataclass(frozen=True)
class Found:
    """An entry that answers a call: by its key, or ``similar`` (its question nearest the
    call's, ``similarity`` the cosine)."""

    key: str
    entry: Entry
    similarity: float = 1.0
    similar: bool = False


def find(key: str, now: datetime) -> Found | None:
    """The entry of ``key``, if it has not expired. In SQL of its own: the ORM spends
    more building this query than the database spends answering it, on every miss."""
    with connection.cursor() as cursor:
        cursor.execute(_FIND, [key, connection.ops.adapt_datetimefield_value(now)])
        row = cursor.fetchone()
    return Found(key, loads(row[0])) if row is not None else None


def nearest(context: str, vector: Vector, least: float, now: datetime) -> Found | None:
    """The entry of ``context`` whose question is most similar to ``vector``, when the
    cosine similarity is at least ``least``."""
    import numpy as np

    rows = list(
        CachedReply.objects.filter(context=context, expires_at__gt=now, vector__isnull=False)
        .order_by("-used_at")
        .values_list("key", "vector", "reply")[:CANDIDATES]
    )
    query = np.asarray(vector, dtype=np.float32)
    usable = [  # vectors of the same size: the same embedder's
        (key, bytes(stored), reply)
        for key, stored, reply in rows
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
    key, _, reply = usable[best]
    return Found(key, loads(reply), float(similarity[best]), similar=True)


def write(stored: Sequence[NewEntry], used: Sequence[str], now: datetime) -> None:
    """Keep ``stored`` (a newer reply replaces one of the same key) and note the hits of
    ``used`` (keys)."""
    if stored:
        with connection.cursor() as cursor:
            cursor.executemany(_UPSERT, [_row(item, now) for item in stored])
    if used:
        keys = sorted(set(used))
        touched = _TOUCH.format(", ".join(["%s"] * len(keys)))
        with connection.cursor() as cursor:
            cursor.execute(touched, [connection.ops.adapt_datetimefield_value(now), *keys])


def _row(item: NewEntry, now: datetime) -> tuple[Any, ...]:
    dated = connection.ops.adapt_datetimefield_value
    created = item.entry.created_at
    return (
        item.keys.key,
        item.keys.context,
        item.agent,
        item.user_id,
        dumps(item.entry),
        packed(item.vector) if item.vector is not None else None,
        dated(created),
        dated(created + timedelta(seconds=item.ttl)),
        dated(now),
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
