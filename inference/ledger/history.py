"""Each user's stored conversation, per requested model (docs/api.md, "History").

Synchronous ORM code, run by the pipeline inside its batched worker-thread calls.
"""

from functools import cache

from django.db import connection

from agents.schema import HistoryConfig
from inference.ledger.tokens import estimate_tokens
from inference.models import StoredMessage
from inference.providers.types import Message


def load_history(user_id: str, model: str, limits: HistoryConfig) -> list[Message]:
    """The newest turns that fit ``max_messages`` and ``max_tokens``, oldest first."""
    if limits.max_messages == 0:
        return []
    with connection.cursor() as cursor:
        cursor.execute(
            _newest_messages_sql(connection.vendor, limits.max_messages), [user_id, model]
        )
        rows = cursor.fetchall()
    kept: list[Message] = []
    budget = limits.max_tokens
    for role, content in rows:
        budget -= estimate_tokens(content)
        if budget < 0:
            break
        kept.append(Message(role=role, content=content))
    kept.reverse()
    # A replay that starts with the assistant confuses providers that require a user turn first.
    while kept and kept[0].role != "user":
        kept.pop(0)
    return kept


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


def history_rows(user_id: str, model: str, user_text: str, reply: str) -> list[StoredMessage]:
    return [
        StoredMessage(user_id=user_id, model=model, role="user", content=_storable(user_text)),
        StoredMessage(user_id=user_id, model=model, role="assistant", content=_storable(reply)),
    ]


def _storable(text: str) -> str:
    """PostgreSQL text cannot hold NUL; keep the rest of the message."""
    return text.replace("\x00", "\ufffd")
