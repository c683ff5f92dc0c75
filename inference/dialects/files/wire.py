"""The Files API's shapes: the file object, a page of them, a deletion."""

from typing import Any

from inference.models import StoredFile

PURPOSES = ("assistants", "user_data", "vision", "batch", "fine-tune", "evals")


def file_object(row: StoredFile) -> dict[str, Any]:
    return {
        "id": row.id,
        "object": "file",
        "bytes": row.bytes,
        "created_at": int(row.created_at.timestamp()),
        "filename": row.filename,
        "purpose": row.purpose,
        "status": "processed",
        "status_details": None,
        "expires_at": None,
    }


def file_list(rows: list[StoredFile], has_more: bool) -> dict[str, Any]:
    return {
        "object": "list",
        "data": [file_object(row) for row in rows],
        "has_more": has_more,
        "first_id": rows[0].id if rows else None,
        "last_id": rows[-1].id if rows else None,
    }


def deleted(file_id: str) -> dict[str, Any]:
    return {"id": file_id, "object": "file", "deleted": True}
