"""Erased users, as the writers of user data see them: once ``DELETE /admin/users/{id}``
has answered, work that began before it (a turn in flight, a judge, an extraction) may
not write that user's data back. Writers ask here, inside their transaction, which of
the users they write for were erased since their work began; what would name such a
user is dropped, or kept under the digest (``erased_id``) where the accounts need it.

On PostgreSQL an erasure and a writer are serialized per user: the erasure holds an
advisory lock, exclusive, until it commits; a writer holds it shared until its own
commit, so it reads the erasure or the erasure deletes what it wrote. SQLite's
transactions take the database's write lock, which serializes them already.
"""

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime

from django.db import connection

from inference.models import Erasure


def erased_id(user_id: str) -> str:
    """What a user's id becomes in the rows kept for accounting."""
    return f"erased-{hashlib.sha256(user_id.encode()).hexdigest()[:24]}"


@dataclass(frozen=True)
class Erasures:
    """The latest erasure of each user a writer asked about."""

    latest: dict[str, datetime]

    def since(self, user_id: str, started: datetime) -> bool:
        """Whether the user was erased after work for them began at ``started``."""
        erased = self.latest.get(user_id)
        return erased is not None and erased >= started

    def kept_id(self, user_id: str, started: datetime) -> str:
        """The id to write in a row the accounts keep: the digest, if erased since."""
        return erased_id(user_id) if self.since(user_id, started) else user_id


def erasures_of(users: Iterable[str]) -> Erasures:
    """The latest erasure of each of ``users`` (inside the writer's transaction).

    Every request's records ask this, and almost always of a table with no row for the
    user: the statement is written out, because building it with the ORM cost about 5
    times what SQLite spends answering it."""
    digests = {erased_id(user): user for user in users}
    if not digests:
        return Erasures({})
    _lock(sorted(digests), shared=True)
    table = connection.ops.quote_name(Erasure._meta.db_table)
    marks = ", ".join(["%s"] * len(digests))
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT digest, MAX(erased_at) FROM {table} WHERE digest IN ({marks}) GROUP BY digest",
            list(digests),
        )
        found = cursor.fetchall()
    return Erasures({digests[digest]: _aware(erased_at) for digest, erased_at in found})


def _aware(moment: datetime | str) -> datetime:
    """A time as the database driver gave it (SQLite's driver: an ISO string, in UTC)."""
    if isinstance(moment, datetime):
        return moment if moment.tzinfo is not None else moment.replace(tzinfo=UTC)
    return datetime.fromisoformat(moment).replace(tzinfo=UTC)


def record_erasure(user_id: str, now: datetime) -> None:
    """Note the user's erasure (inside the erasure's transaction)."""
    digest = erased_id(user_id)
    _lock([digest], shared=False)
    Erasure.objects.create(digest=digest, erased_at=now)


def _lock(digests: list[str], shared: bool) -> None:
    if connection.vendor != "postgresql":
        return
    function = "pg_advisory_xact_lock_shared" if shared else "pg_advisory_xact_lock"
    with connection.cursor() as cursor:
        cursor.execute(
            f"SELECT {function}(hashtextextended('erasure:' || digest, 0)) "
            "FROM unnest(%s::text[]) AS digest",
            [digests],
        )
