"""Each user's stored conversation, per requested model (docs/api.md, "History").

Synchronous ORM code, run by the pipeline inside its batched worker-thread calls.

The newest messages of a conversation are kept in process (``HistoryCache``) with their
ids, and a request reads them in one statement whatever happened since:

- never read here (or read with a smaller ``max_messages``): the newest rows;
- read before: the row count and newest id from the oldest cached row up, and the rows
  newer than the newest cached one. Unchanged, that is the cached rows' own count and
  newest id, and no row. Only appended to (a turn written through another worker: with
  several workers, most requests of a user find the last turn written by another), the
  count grew by exactly the newer rows read, which are kept. Any other change (an
  erasure, a row deleted, a transaction of another process that committed late on
  PostgreSQL under an older id) reads the newest rows again.

Rows older than the cached ones cannot change which rows are the newest ``max_messages``
(when fewer are cached, the count is taken from the first row): the statement reads at
most about ``max_messages`` index entries, not the whole conversation. A turn this
process writes is appended to its cached conversation once committed. So every process
replays exactly what the database holds, and a process answering the same users again
reads no message it already has.
"""

import threading
from collections import OrderedDict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from functools import cache, cached_property

from django.db import connection, transaction
from django.db.backends.utils import CursorWrapper

from agents.schema import HistoryConfig
from inference.database import insert_rows
from inference.models import StoredMessage
from inference.neutral.tokens import estimate_tokens
from inference.neutral.types import Message, Role

# What the cache may hold, in characters of message text (plus a row's overhead each):
# about 20 MB at most, whatever the number of users.
CACHE_CHARACTERS = 16 * 1024 * 1024
_ROW_OVERHEAD = 200

type Row = tuple[int, str, str]  # a stored message's id, role and content


@dataclass(frozen=True)
class CachedConversation:
    limit: int  # how many of the newest rows were asked for (max_messages then)
    ids: tuple[int, ...]  # the ids of the newest rows (at most ``limit``), oldest first
    messages: tuple[Message, ...]  # those rows

    @property
    def newest(self) -> int:
        return self.ids[-1] if self.ids else 0

    @property
    def floor(self) -> int:
        """The id from which the conversation's rows are exactly the cached ones: the
        oldest cached one's when there are ``limit`` of them (an older row, added or
        removed, is not among the newest ``limit``), else 0 (they are all of it)."""
        return self.ids[0] if len(self.ids) >= self.limit else 0

    def serving(self, limit: int) -> "CachedConversation | None":
        """It, as the newest ``limit`` rows of its version (asked for with a larger limit
        when it holds the whole conversation), or None when it holds too few."""
        if limit <= self.limit:
            return self
        if len(self.ids) < self.limit:
            return CachedConversation(limit, self.ids, self.messages)
        return None

    def with_rows(self, rows: Iterable[Row]) -> "CachedConversation":
        """With ``rows`` appended (newer than its own, ids in order)."""
        added = list(rows)
        ids = (*self.ids, *(id_ for id_, _, _ in added))
        messages = (*self.messages, *(_message(role, content) for _, role, content in added))
        return CachedConversation(self.limit, ids[-self.limit :], messages[-self.limit :])

    @cached_property
    def size(self) -> int:
        """Read when the conversation is cached and again when it leaves."""
        return sum(len(message.content) + _ROW_OVERHEAD for message in self.messages)


class HistoryCache:
    """The newest messages of recently served conversations, least recently used out
    first. Used from the database threads."""

    def __init__(self, characters: int = CACHE_CHARACTERS) -> None:
        self._capacity = characters
        self._size = 0
        self._conversations: OrderedDict[tuple[str, str], CachedConversation] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: tuple[str, str]) -> CachedConversation | None:
        with self._lock:
            found = self._conversations.get(key)
            if found is not None:
                self._conversations.move_to_end(key)
            return found

    def put(self, key: tuple[str, str], conversation: CachedConversation) -> None:
        with self._lock:
            self._drop(key)
            if conversation.size > self._capacity:
                return
            self._conversations[key] = conversation
            self._size += conversation.size
            while self._size > self._capacity:
                self._drop(next(iter(self._conversations)))

    def append(self, key: tuple[str, str], rows: Sequence[StoredMessage]) -> None:
        """What a committed write of this process added (ids in order)."""
        with self._lock:
            found = self._conversations.get(key)
        if found is None or any(row.pk is None for row in rows):
            return
        self.put(key, found.with_rows((row.pk, row.role, row.content) for row in rows))

    def clear(self) -> None:
        with self._lock:
            self._conversations.clear()
            self._size = 0

    def _drop(self, key: tuple[str, str]) -> None:
        if (dropped := self._conversations.pop(key, None)) is not None:
            self._size -= dropped.size


HISTORY_CACHE = HistoryCache()


def load_history(user_id: str, model: str, limits: HistoryConfig) -> list[Message]:
    """The newest turns that fit ``max_messages`` and ``max_tokens``, oldest first."""
    limit = limits.max_messages
    if limit == 0:
        return []
    key = (user_id, model)
    cached = HISTORY_CACHE.get(key)
    serving = cached.serving(limit) if cached is not None else None
    with connection.cursor() as cursor:
        conversation = None
        if serving is not None:
            conversation = _checked(cursor, key, serving)
        if conversation is None:
            cursor.execute(_newest_messages_sql(connection.vendor, limit), [user_id, model])
            rows: list[Row] = cursor.fetchall()
            conversation = CachedConversation(limit, (), ()).with_rows(reversed(rows))
        if conversation is not cached:
            HISTORY_CACHE.put(key, conversation)
    return _window(conversation.messages[-limit:], limits.max_tokens)


def history_before(
    user_id: str, model: str, before_id: int, limits: HistoryConfig
) -> list[Message]:
    """The conversation before the stored message ``before_id`` as a turn at that point
    replayed it under ``limits``: its newest messages within ``max_messages`` and
    ``max_tokens``, oldest first (an evaluation's cases, ``inference.evaluations``)."""
    if limits.max_messages == 0:
        return []
    rows = (
        StoredMessage.objects.filter(user_id=user_id, model=model, id__lt=before_id)
        .order_by("-id")
        .values_list("role", "content")[: limits.max_messages]
    )
    messages = [_message(role, content) for role, content in reversed(rows)]
    return _window(messages, limits.max_tokens)


def _checked(
    cursor: CursorWrapper, key: tuple[str, str], cached: CachedConversation
) -> CachedConversation | None:
    """``cached`` as the database holds it now: itself when nothing changed, with the
    rows another process appended when that is all that changed (the rows newer than its
    newest are exactly as many as the count grew by), else None (read the newest rows
    again)."""
    user_id, model = key
    cursor.execute(
        _check_sql(connection.vendor),
        [user_id, model, cached.floor, user_id, model, cached.newest, cached.limit + 1],
    )
    added: list[Row] = []
    count = newest = 0
    for number, most, role, content in cursor.fetchall():
        if role is None:  # the count's row
            count, newest = number, most or 0
        else:
            added.append((number, role, content))
    if count == len(cached.ids) and newest == cached.newest:
        return cached
    added.sort()
    if added and len(added) == count - len(cached.ids) and added[-1][0] == newest:
        return cached.with_rows(added)
    return None


def _window(newest: Sequence[Message], max_tokens: int) -> list[Message]:
    """The newest of ``newest`` (oldest first) within ``max_tokens``, starting with a user
    turn: a replay that starts with the assistant confuses providers that require one."""
    kept: list[Message] = []
    budget = max_tokens
    for message in reversed(newest):
        budget -= estimate_tokens(message.content)
        if budget < 0:
            break
        kept.append(message)
    kept.reverse()
    start = next((index for index, message in enumerate(kept) if message.role == "user"), len(kept))
    return kept[start:]


@cache
def _check_sql(vendor: str) -> str:
    """One row of the row count and newest id of a user's conversation with a model from
    an id up (its role NULL), and one row of each row newer than another id, at most a
    number of them (parameters: the user id, the model and the first id; the user id,
    the model, the other id and the number). Both are ranges of the (user, model, id)
    index."""
    table = connection.ops.quote_name(StoredMessage._meta.db_table)
    return (
        f"SELECT COUNT(*), MAX(id), NULL, NULL FROM {table} "
        "WHERE user_id = %s AND model = %s AND id >= %s UNION ALL "
        f"SELECT * FROM (SELECT id, CAST(NULL AS BIGINT), role, content FROM {table} "
        "WHERE user_id = %s AND model = %s AND id > %s ORDER BY id LIMIT %s) AS newer"
    )


@cache
def _newest_messages_sql(vendor: str, limit: int) -> str:
    """The SQL of a user's newest ``limit`` messages (id, role, content), newest first,
    with the user id and the model as its two parameters in that order. Built by the ORM
    once per limit: building it for every request cost more CPU than running it."""
    newest = (
        StoredMessage.objects.filter(user_id="")
        .filter(model="")  # a second filter() keeps the parameters in this order
        .order_by("-id")
        .values_list("id", "role", "content")[:limit]
    )
    sql: str
    sql, _ = newest.query.get_compiler(connection=connection).as_sql()
    return sql


def store_history(rows: list[StoredMessage]) -> None:
    """Insert ``rows`` (the caller holds the transaction); once committed, this process's
    cached conversations have them too."""
    insert_rows(rows, ids=True)
    by_conversation: dict[tuple[str, str], list[StoredMessage]] = {}
    for row in rows:
        by_conversation.setdefault((row.user_id, row.model), []).append(row)

    def cache_them() -> None:
        for key, added in by_conversation.items():
            HISTORY_CACHE.append(key, added)

    transaction.on_commit(cache_them)


def history_rows(user_id: str, model: str, user_text: str, reply: str) -> list[StoredMessage]:
    return [
        StoredMessage(user_id=user_id, model=model, role="user", content=_storable(user_text)),
        StoredMessage(user_id=user_id, model=model, role="assistant", content=_storable(reply)),
    ]


def _message(role: str, content: str) -> Message:
    return Message(role=_role(role), content=content)


def _role(role: str) -> Role:
    return "user" if role == "user" else "assistant"


def _storable(text: str) -> str:
    """PostgreSQL text cannot hold NUL; keep the rest of the message."""
    return text.replace("\x00", "\ufffd")
