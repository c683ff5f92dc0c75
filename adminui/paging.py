"""Cursor pagination of recorded rows, newest first: ``{"data": [...], "next": cursor}``."""

from django.db.models import QuerySet

from agents.store import BadRequest

PAGE_SIZE = 50
_MAX_ID = 2**63 - 1  # the largest id a database stores (SQLite and PostgreSQL bigint)


def page(rows: QuerySet, cursor: str | None, size: int = PAGE_SIZE) -> tuple[list, str | None]:
    if cursor:
        rows = rows.filter(id__lt=_cursor_id(cursor))
    found = list(rows.order_by("-id")[: size + 1])
    following = str(found[size - 1].id) if len(found) > size else None
    return found[:size], following


def _cursor_id(cursor: str) -> int:
    """The row id a ``next`` value stands for: ASCII digits, within the ids a database holds."""
    if cursor.isascii() and cursor.isdigit() and len(cursor) <= len(str(_MAX_ID)):
        value = int(cursor)
        if 0 < value <= _MAX_ID:
            return value
    raise BadRequest("cursor: use the value of next from the previous page")
