"""insert_rows: the writer's batched inserts, in few statement shapes, ids in row order."""

from collections.abc import Callable
from typing import Any

import pytest
from django.db import connection

from inference.database import insert_rows
from inference.models import StoredMessage

pytestmark = pytest.mark.django_db


def messages(count: int, batch: int) -> list[StoredMessage]:
    return [
        StoredMessage(user_id="u", model="m", role="user", content=f"{batch}-{index}")
        for index in range(count)
    ]


def test_batches_of_every_size_share_a_few_statements_and_get_their_ids() -> None:
    statements: set[str] = set()
    executed: list[str] = []

    def record(execute: Callable[..., Any], sql: str, *args: Any) -> Any:
        executed.append(sql)  # the statement as prepared, its parameters apart
        return execute(sql, *args)

    for count in range(1, 21):
        rows = messages(count, count)
        executed.clear()
        with connection.execute_wrapper(record):
            insert_rows(rows, ids=True)
        assert len(executed) == count.bit_count()  # 13 rows: 8 + 4 + 1
        statements.update(executed)
        stored = StoredMessage.objects.filter(content__startswith=f"{count}-").order_by("id")
        assert [(row.id, row.content) for row in stored] == [(row.pk, row.content) for row in rows]
    assert len(statements) == 5  # 1, 2, 4, 8 and 16 rows, not one shape per batch size
