"""Each user's stored conversation, per requested model (docs/api.md, "History").

Synchronous ORM code, run by the pipeline inside its batched worker-thread calls.

The newest messages of a conversation are kept in process (``HistoryCache``), under the
version they were read at: the conversation's row count and newest id, which one indexed
aggregate reads on every request. A turn this process writes is appended to its cached
conversation once committed, under the version that write leads to; any other change (a
turn written through another process, an erasure, a transaction of another process that
commits late on PostgreSQL) changes the count, and the next request reads the rows again.
So every process replays exactly what the database holds, and a process answering the
same users again reads only the version.

When other processes only appended (turns written through another worker: with several
workers, most requests of a user find the last turn written by another), the next request
reads the rows newer than the cached newest id only, and keeps them if they are exactly
what the count says was added; any other change reads the newest rows again.
"""

import threading
from collections import OrderedDict
from collections.abc import Sequence
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


@dataclass(frozen=True)
class CachedConversation:
    count: int  # the rows the conversation had
    newest: int  # and its newest row's id, when these messages were read
    limit: int  # how many of the newest rows were read
    messages: tuple[Message, ...]  # those rows, oldest first

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

    def get(
        self, key: tuple[str, str], count: int, newest: int, limit: int
    ) -> CachedConversation | None:
        with self._lock:
            found = self._conversations.get(key)
            if found is None or (found.count, found.newest) != (count, newest):
                return None
            if found.limit < limit and found.count > len(found.messages):
                return None  # read with a smaller max_messages than asked now
            self._conversations.move_to_end(key)
            return found

    def outdated(self, key: tuple[str, str], limit: int) -> CachedConversation | None:
        """The conversation cached under ``key`` whatever its version, if it holds the
        newest ``limit`` messages of that version."""
        with self._lock:
            found = self._conversations.get(key)
        if found is None or (found.limit < limit and found.count > len(found.messages)):
            return None
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
        added = tuple(Message(role=_role(row.role), content=row.content) for row in rows)
        messages = (*found.messages, *added)[-found.limit :]
        newest = max(row.pk for row in rows)
        self.put(key, CachedConversation(found.count + len(rows), newest, found.limit, messages))

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
    if limits.max_messages == 0:
        return []
    key = (user_id, model)
    with connection.cursor() as cursor:
        cursor.execute(_version_sql(connection.vendor), [user_id, model])
        count, newest = cursor.fetchone()
        newest = newest or 0
        conversation = HISTORY_CACHE.get(key, count, newest, limits.max_messages)
        if conversation is None:
            conversation = _caught_up(cursor, key, count, newest, limits.max_messages)
        if conversation is None:
            cursor.execute(
                _newest_messages_sql(connection.vendor, limits.max_messages), [user_id, model]
            )
            rows = cursor.fetchall()
            messages = tuple(
                Message(role=role, content=content) for role, content in reversed(rows)
            )
            conversation = CachedConversation(count, newest, limits.max_messages, messages)
            HISTORY_CACHE.put(key, conversation)
    return _window(conversation.messages[-limits.max_messages :], limits.max_tokens)


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
    messages = [Message(role=_role(role), content=content) for role, content in reversed(rows)]
    return _window(messages, limits.max_tokens)


def _caught_up(
    cursor: CursorWrapper, key: tuple[str, str], count: int, newest: int, limit: int
) -> CachedConversation | None:
    """The cached conversation with the rows other processes appended since it was read,
    when that is all that changed: the rows newer than its newest id are exactly as many
    as the count grew by (a row deleted, or one committed late under an older id, makes
    them differ). None: read the newest rows again."""
    cached = HISTORY_CACHE.outdated(key, limit)
    if cached is None or not 0 < count - cached.count <= cached.limit:
        return None
    added = count - cached.count
    cursor.execute(_newer_messages_sql(connection.vendor), [*key, cached.newest, added + 1])
    rows = cursor.fetchall()
    if len(rows) != added or rows[-1][0] != newest:
        return None
    appended = (Message(role=role, content=content) for _, role, content in rows)
    messages = (*cached.messages, *appended)[-cached.limit :]
    conversation = CachedConversation(count, newest, cached.limit, messages)
    HISTORY_CACHE.put(key, conversation)
    return conversation


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
def _version_sql(vendor: str) -> str:
    """The row count and newest id of a user's conversation with a model (the user id and
    the model as parameters): an index range scan, no message text read."""
    table = connection.ops.quote_name(StoredMessage._meta.db_table)
    return f"SELECT COUNT(*), MAX(id) FROM {table} WHERE user_id = %s AND model = %s"


@cache
def _newest_messages_sql(vendor: str, limit: int) -> str:
    """The SQL of a user's newest ``limit`` messages, newest first, with the user id and
    the model as its two parameters in that order. Built by the ORM once per limit: building
    it for every request cost more CPU than running it."""
    newest = (
        StoredMessage.objects.filter(user_id="")
        .filter(model="")  # a second filter() keeps the parameters in this order
        .order_by("-id")
        .values_list("role", "content")[:limit]
    )
    sql: str
    sql, _ = newest.query.get_compiler(connection=connection).as_sql()
    return sql


@cache
def _newer_messages_sql(vendor: str) -> str:
    """The SQL of a user's messages newer than an id, oldest first, at most a number of
    them (parameters: the user id, the model, the id, the number)."""
    table = connection.ops.quote_name(StoredMessage._meta.db_table)
    return (
        f"SELECT id, role, content FROM {table} "
        "WHERE user_id = %s AND model = %s AND id > %s ORDER BY id LIMIT %s"
    )


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


def _role(role: str) -> Role:
    return "user" if role == "user" else "assistant"


def _storable(text: str) -> str:
    """PostgreSQL text cannot hold NUL; keep the rest of the message."""
    return text.replace("\x00", "\ufffd")
