"""Cursor pagination of recorded rows, newest first: ``{"data": [...], "next": cursor}``."""

from collections.abc import Callable, Sequence
from typing import Protocol

from adminui.rendering.errors import AdminError

PAGE_SIZE = 50
_MAX_ID = 2**63 - 1  # the largest id a database stores (SQLite and PostgreSQL bigint)


class Row(Protocol):
    @property
    def id(self) -> int: ...


def page[R: Row](
    fetch: Callable[[int | None, int], Sequence[R]], cursor: str | None, size: int = PAGE_SIZE
) -> tuple[list[R], str | None]:
    """One page of what ``fetch(before_id, limit)`` returns (newest first), and the cursor
    of the next page (None on the last)."""
    found = list(fetch(_cursor_id(cursor) if cursor else None, size + 1))
    following = str(found[size - 1].id) if len(found) > size else None
    return found[:size], following


def _cursor_id(cursor: str) -> int:
    """The row id a ``next`` value stands for: ASCII digits, within the ids a database holds."""
    if cursor.isascii() and cursor.isdigit() and len(cursor) <= len(str(_MAX_ID)):
        value = int(cursor)
        if 0 < value <= _MAX_ID:
            return value
    raise AdminError(400, "cursor: use the value of next from the previous page", "bad_request")
