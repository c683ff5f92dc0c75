"""The response cache's answers, forgotten on demand (docs/caching.md): an agent's, a
user's, or both, or all of them."""

from typing import Any

from ninja import Router
from pydantic import BaseModel

from adminui.context import AdminRequest
from adminui.schemas import errors
from inference.cache.forgetting import purge_entries

router = Router(tags=["cache"])


class Purged(BaseModel):
    removed: int


@router.delete(
    "/cache",
    response={200: Purged, **errors()},
    operation_id="purge_cache",
    url_name="cache_purge",
    summary="Forget the response cache's answers: an agent's (?agent=), a user's (?user=), "
    "both, or every one",
)
def purge(request: AdminRequest, agent: str | None = None, user: str | None = None) -> Any:
    return {"removed": purge_entries(agent or None, user or None)}
