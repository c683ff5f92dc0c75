"""Revisions of the config file: their diffs, and restoring one (an ordinary validated write)."""

from typing import Any

from django.urls import reverse
from ninja import Router
from ninja.responses import Status

from adminui.context import AdminRequest
from adminui.editing.collections import author_of
from adminui.rendering.errors import AdminError
from adminui.rendering.negotiation import respond, written
from adminui.rendering.paging import page
from adminui.schemas import RestoreIn, RevisionOut, RevisionPage, errors
from agents import store
from agents.models import ConfigRevision
from agents.revisions import masked_text

router = Router(tags=["revisions"])


class RevisionDetail(RevisionOut):
    text: str  # the whole file at that revision, secrets masked


@router.get(
    "/revisions",
    response={200: RevisionPage, **errors()},
    operation_id="list_revisions",
    url_name="revisions",
    summary="Applied versions of the config file, newest first",
)
def list_revisions(request: AdminRequest, cursor: str | None = None) -> Any:
    rows, following = page(_revisions_before, cursor)
    data = {"data": [_summary(row) for row in rows], "next": following}
    return respond(request, data, "adminui/revisions.html", revisions=data["data"])


@router.get(
    "/revisions/{revision_id}",
    response={200: RevisionDetail, **errors(404)},
    operation_id="read_revision",
    url_name="revision",
    summary="One revision with its whole text, secrets masked",
)
def read_revision(request: AdminRequest, revision_id: int) -> Any:
    revision = ConfigRevision.objects.filter(pk=revision_id).first()
    if revision is None:
        raise AdminError(404, f"revision {revision_id} does not exist", "not_found")
    data = {**_summary(revision), "text": masked_text(revision.text)}
    return respond(request, data, "adminui/revision.html", revision=data)


@router.post(
    "/revisions/{revision_id}/restore",
    response={200: RevisionOut, **errors(404, 422, 503)},
    operation_id="restore_revision",
    url_name="revision_restore",
    summary="Write that revision's text back through the validated write pipeline",
)
def restore_revision(
    request: AdminRequest, revision_id: int, payload: RestoreIn | None = None
) -> Any:
    result = store.restore_revision(request.runtime.holder, revision_id, author_of(request))
    restored = result.revision or ConfigRevision.objects.order_by("-id").first()
    assert restored is not None  # the restore recorded one, or the file already was it
    return written(request, reverse("admin:revisions"), Status(200, _summary(restored)))


def _revisions_before(before_id: int | None, limit: int) -> list[ConfigRevision]:
    rows = ConfigRevision.objects.defer("text").order_by("-id")
    if before_id is not None:
        rows = rows.filter(id__lt=before_id)
    return list(rows[:limit])


def _summary(revision: ConfigRevision) -> dict[str, Any]:
    return {
        "id": revision.id,
        "created_at": revision.created_at,
        "author": revision.author,
        "etag": revision.etag,
        "diff": revision.diff,
    }
