"""Cursor pagination of recorded rows, newest first: ``{"data": [...], "next": cursor}``."""

from django.db.models import QuerySet

from agents.store import BadRequest

PAGE_SIZE = 50


def page(rows: QuerySet, cursor: str | None, size: int = PAGE_SIZE) -> tuple[list, str | None]:
    if cursor:
        if not cursor.isdigit():
            raise BadRequest("cursor: use the value of next from the previous page")
        rows = rows.filter(id__lt=int(cursor))
    found = list(rows.order_by("-id")[: size + 1])
    following = str(found[size - 1].id) if len(found) > size else None
    return found[:size], following
