"""Revisions of the config file: their diffs, and restoring one (an ordinary validated write)."""

from typing import Any

from django.http import HttpRequest
from ninja import Router
from ninja.responses import Status

from adminui.collection_routes import author_of, errors
from adminui.negotiation import respond, written
from adminui.paging import page
from adminui.schemas import RestoreIn, RevisionOut, RevisionPage
from agents import store
from agents.models import ConfigRevision
from agents.revisions import masked_text
from gateway import runtime

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
def list_revisions(request: HttpRequest, cursor: str | None = None) -> Any:
    rows, following = page(ConfigRevision.objects.defer("text"), cursor)
    data = {"data": [_summary(row) for row in rows], "next": following}
    return respond(request, data, "adminui/revisions.html", revisions=data["data"])


@router.get(
    "/revisions/{revision_id}",
    response={200: RevisionDetail, **errors(404)},
    operation_id="read_revision",
    url_name="revision",
    summary="One revision with its whole text, secrets masked",
)
def read_revision(request: HttpRequest, revision_id: int) -> Any:
    revision = _revision(revision_id)
    data = {**_summary(revision), "text": masked_text(revision.text)}
    return respond(request, data, "adminui/revision.html", revision=data)


@router.post(
    "/revisions/{revision_id}/restore",
    response={200: RevisionOut, **errors(404, 422)},
    operation_id="restore_revision",
    url_name="revision_restore",
    summary="Write that revision's text back through the validated write pipeline",
)
def restore_revision(
    request: HttpRequest, revision_id: int, payload: RestoreIn | None = None
) -> Any:
    store.restore_revision(runtime.current().holder, revision_id, author_of(request))
    latest = ConfigRevision.objects.order_by("-id").first()
    return written(request, "/admin/revisions", Status(200, _summary(latest)))


def _revision(revision_id: int) -> ConfigRevision:
    revision = ConfigRevision.objects.filter(pk=revision_id).first()
    if revision is None:
        raise store.NotFound(f"revision {revision_id} does not exist")
    return revision


def _summary(revision: ConfigRevision) -> dict[str, Any]:
    return {
        "id": revision.id,
        "created_at": revision.created_at,
        "author": revision.author,
        "etag": revision.etag,
        "diff": revision.diff,
    }
