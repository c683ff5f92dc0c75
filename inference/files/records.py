"""Files' metadata in the database (``StoredFile``), one user's at a time; every function
runs on a database thread (``in_database``)."""

from collections.abc import Sequence
from datetime import datetime
from typing import Literal

from django.db import transaction
from django.db.models import Sum

from inference.erasures import erasures_of
from inference.models import StoredFile
from inference.neutral.errors import ApiError, invalid_request


def add_file(
    row: StoredFile, max_user_bytes: int, started_at: datetime, max_total_bytes: int | None
) -> None:
    """Keep ``row`` unless it takes its user over ``max_user_bytes``, or all users over
    ``max_total_bytes`` (400 ``quota_exceeded``), or the user was erased since the
    upload began (410)."""
    with transaction.atomic():
        erasures = erasures_of([row.user_id])
        if erasures.since(row.user_id, started_at):
            raise ApiError(410, "The user was erased while the file was uploaded", code="gone")
        held = StoredFile.objects.filter(user_id=row.user_id).aggregate(total=Sum("bytes"))
        total = (held["total"] or 0) + row.bytes
        if total > max_user_bytes:
            raise invalid_request(
                f"The user's files would take {total} bytes, more than files.max_user_mb "
                f"allows ({max_user_bytes} bytes): delete some first",
                param="file",
                code="quota_exceeded",
            )
        if max_total_bytes is not None:
            everyone = StoredFile.objects.aggregate(total=Sum("bytes"))["total"] or 0
            if everyone + row.bytes > max_total_bytes:
                raise invalid_request(
                    f"The gateway's files would take {everyone + row.bytes} bytes, more than "
                    f"files.max_total_mb allows ({max_total_bytes} bytes)",
                    param="file",
                    code="quota_exceeded",
                )
        row.save(force_insert=True)


def file_of(user_id: str, file_id: str) -> StoredFile | None:
    return StoredFile.objects.filter(user_id=user_id, id=file_id).first()


def files_of(user_id: str, file_ids: Sequence[str]) -> dict[str, StoredFile]:
    """The user's files among ``file_ids`` (another user's are not there)."""
    rows = StoredFile.objects.filter(user_id=user_id, id__in=set(file_ids))
    return {row.id: row for row in rows}


def page_of_files(
    user_id: str,
    limit: int,
    after: str | None,
    order: Literal["asc", "desc"],
    purpose: str | None,
) -> tuple[list[StoredFile], bool]:
    """A page of the user's files in ``order`` of creation, after the file ``after``;
    whether more follow."""
    rows = StoredFile.objects.filter(user_id=user_id)
    if purpose is not None:
        rows = rows.filter(purpose=purpose)
    newest_first = order == "desc"
    if after is not None and (cursor := rows.filter(id=after).first()) is not None:
        if newest_first:
            rows = rows.filter(created_at__lte=cursor.created_at).exclude(
                created_at=cursor.created_at, id__gte=cursor.id
            )
        else:
            rows = rows.filter(created_at__gte=cursor.created_at).exclude(
                created_at=cursor.created_at, id__lte=cursor.id
            )
    ordering = ("-created_at", "-id") if newest_first else ("created_at", "id")
    found = list(rows.order_by(*ordering)[: limit + 1])
    return found[:limit], len(found) > limit


def delete_file(user_id: str, file_id: str) -> bool:
    deleted, _ = StoredFile.objects.filter(user_id=user_id, id=file_id).delete()
    return bool(deleted)
