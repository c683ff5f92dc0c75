"""What agents remember about users (docs/memory.md): list, add by hand, delete; and
erasing everything stored about a user."""

from datetime import datetime
from typing import Any, cast
from urllib.parse import urlencode

from django.urls import reverse
from ninja import Router
from ninja.responses import Status
from pydantic import BaseModel, SkipValidation

from adminui.context import AdminRequest
from adminui.rendering.bodies import form_data
from adminui.rendering.errors import AdminError
from adminui.rendering.negotiation import is_form, is_html, respond, written
from adminui.rendering.paging import page
from adminui.schemas import errors
from inference.files.storage import folder_of, folder_without_config
from inference.ledger.erasure import erase_user
from inference.memory.by_hand import CannotRemember, EmbeddingFailed
from inference.memory.store import Memory, delete_memory, memories_before

router = Router(tags=["memories"])


class MemoryOut(BaseModel):
    id: int
    user: str
    agent: str
    text: str
    embedder: str
    created_at: datetime
    source: str | None  # the completion id it was extracted from; null when added by hand


class MemoryPage(BaseModel):
    data: list[MemoryOut]
    next: str | None


class MemoryIn(BaseModel):
    user: str
    agent: str
    text: str


class Removed(BaseModel):
    conversations: int
    messages: int
    memories: int
    responses: int
    files: int
    mcp_connections: int
    tasks: int
    batches: int


class Erased(BaseModel):
    user: str
    removed: Removed


@router.get(
    "/memories",
    response={200: MemoryPage, **errors()},
    operation_id="list_memories",
    url_name="memories",
    summary="Memories, newest first; filter by user and agent",
)
def list_memories(
    request: AdminRequest,
    user: str | None = None,
    agent: str | None = None,
    cursor: str | None = None,
) -> Any:
    rows, following = page(
        lambda before, limit: memories_before(user, agent, before, limit), cursor
    )
    data = {"data": [_described(row) for row in rows], "next": following}
    return respond(request, data, "adminui/memories.html", filters={"user": user, "agent": agent})


@router.post(
    "/memories",
    response={201: MemoryOut, **errors(422, 502)},
    operation_id="create_memory",
    url_name="memories_create",
    summary="Add a memory by hand: embedded before the answer, so the next request recalls it",
)
async def create_memory(request: AdminRequest, payload: SkipValidation[MemoryIn]) -> Any:
    fields = form_data(request) if is_form(request) else cast(dict[str, Any], payload)
    user, agent, text = (str(fields.get(name) or "").strip() for name in ("user", "agent", "text"))
    missing = [
        name for name, value in (("user", user), ("agent", agent), ("text", text)) if not value
    ]
    if missing:
        raise AdminError(422, f"Required: {', '.join(missing)}", "invalid")
    try:
        stored = await request.runtime.remember(user, agent, text)
    except CannotRemember as error:
        raise AdminError(422, f"{error.field}: {error}", "invalid") from error
    except EmbeddingFailed as error:
        raise AdminError(502, f"The embedder failed: {error}", "upstream_error") from error
    if is_html(request):
        location = f"{reverse('admin:memories')}?{urlencode({'user': user})}"
        return written(request, location, _described(stored))
    return Status(201, _described(stored))


@router.delete(
    "/memories/{memory_id}",
    response={200: dict[str, Any], **errors(404)},
    operation_id="delete_memory",
    url_name="memory_delete",
    summary="Delete one memory",
)
def remove_memory(request: AdminRequest, memory_id: int) -> Any:
    if not delete_memory(memory_id):
        raise AdminError(404, f"Memory {memory_id} does not exist", "not_found")
    return written(request, reverse("admin:memories"), {"id": memory_id, "deleted": True})


@router.post(
    "/memories/{memory_id}/delete",
    response={200: dict[str, Any], **errors(404)},
    operation_id="delete_memory_by_form",
    url_name="memory_delete_form",
    summary="Delete one memory (the same, for HTML forms)",
)
def remove_memory_by_form(request: AdminRequest, memory_id: int) -> Any:
    return remove_memory(request, memory_id)


@router.delete(
    "/users/{path:user_id}",
    response={200: Erased, **errors()},
    operation_id="erase_user",
    url_name="user_erase",
    summary="Erase everything stored about a user (history, memories, stored responses, "
    "pending tool exchanges, cached answers, files, MCP connections); the ledger keeps the "
    "costs under a digest of the id",
)
def erase(request: AdminRequest, user_id: str) -> Any:
    holder = request.runtime.holder
    config = holder.config
    folder = folder_of(config) if config is not None else folder_without_config(holder.path)
    return {"user": user_id, "removed": erase_user(user_id, folder)}


def _described(row: Memory) -> dict[str, Any]:
    return {
        "id": row.id,
        "user": row.user_id,
        "agent": row.agent,
        "text": row.text,
        "embedder": row.embedder,
        "created_at": row.created_at,
        "source": row.source or None,
    }
