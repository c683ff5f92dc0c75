"""The five collections' routes: list, create, read, update, delete, and their HTML forms.

Views parse typed input, call one store action and answer (``respond``/``written``); a
write sent from an HTML form is decoded and, if refused, shown again by the form.
"""

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, cast

from django.http import HttpResponse
from django.urls import reverse
from ninja import Router
from ninja.params.functions import Header, Path  # callable; ninja.Header is typed as Annotated
from ninja.responses import Status
from pydantic import BaseModel, SkipValidation

from adminui.access import open_admin
from adminui.context import AdminRequest, admin_scope
from adminui.editing import tables
from adminui.editing.formpages import edit_form, empty_form, form_page, resource_form, submit
from adminui.rendering.negotiation import is_form, is_html, respond, written
from adminui.schemas import ErrorOut, errors
from agents import store
from agents.resources import Resource

HTML_PAGE = {
    200: {"description": "HTML form", "content": {"text/html": {"schema": {"type": "string"}}}}
}


def author_of(request: AdminRequest) -> store.Author:
    """Who writes: the authenticated name (or "admin") and the client's address; without
    ``auth.admin``, the open admin."""
    name = getattr(request, "admin_user", None) or "admin"
    label = f"{name} ({request.META.get('REMOTE_ADDR') or 'unknown client'})"
    return store.Author(label, refuse=open_admin.refusal if admin_scope(request) is None else None)


@dataclass(frozen=True)
class Column:
    """One more column of the collection's table, also shown on each entry's page: a few
    words per entry (by key), ``missing`` for an entry without any, and where the entry's
    full state is (a URL name taking the key), if anywhere."""

    title: str
    summaries: Callable[[AdminRequest], dict[str, str]]
    missing: str = ""
    url_name: str | None = None


@dataclass(frozen=True)
class ItemDetails:
    """More for an entry's page: a template partial and the context it needs."""

    template: str
    context: Callable[[AdminRequest, str], dict[str, Any]]


def collection_router(
    resource: Resource,
    create_schema: type[BaseModel],
    columns: tuple[Column, ...] = (),
    details: ItemDetails | None = None,
) -> Router:
    """The collection's routes; ``columns`` add columns to its pages (a live state, a
    price), ``details`` more to each entry's page (an agent's scores, an experiment's
    results)."""
    section, singular, key_name = resource.section, resource.singular, resource.key_field
    schema = resource.schema
    listing = list[schema] if resource.is_list else dict[str, schema]  # type: ignore[valid-type]
    router = Router(tags=[section])
    item_path = f"/{{{key_name}}}"

    def key_param() -> Any:
        return Path(..., alias=key_name, description=f"The {singular}'s {key_name}.")

    def item_url(key: str) -> str:
        return reverse(f"admin:{section}_read", args=[key])

    def shown_again(request: AdminRequest) -> Any:
        if_match = request.headers.get("If-Match")
        return lambda form, status: form_page(request, resource, form, status, if_match)

    @router.get(
        "",
        response={200: listing, **errors()},
        operation_id=f"list_{section}",
        url_name=section,
        summary=f"List {section}",
        exclude_unset=True,
    )
    def list_entries(request: AdminRequest) -> Any:
        entries = store.entries(request.runtime.holder, resource)
        data = list(entries.values()) if resource.is_list else entries
        headers, rows = tables.headers(resource), tables.rows(resource, entries)
        if is_html(request):
            for column in columns:
                summary = column.summaries(request)
                headers = [*headers, column.title]
                rows = [(key, [*cells, summary.get(key, column.missing)]) for key, cells in rows]
        return respond(
            request, data, "adminui/collection.html", resource=resource, headers=headers, rows=rows
        )

    # OpenAPI links: where the created entry can be read, changed and deleted.
    created_key = f"$request.body#/{key_name}"
    links = {
        f"{verb.capitalize()}Created": {
            "operationId": f"{verb}_{section}",
            "parameters": {key_name: created_key},
        }
        for verb in ("read", "update", "delete")
    }

    @router.post(
        "",
        response={201: schema, **errors(409, 422, 503)},
        operation_id=f"create_{section}",
        url_name=f"{section}_create",
        summary=f"Create a {singular}",
        exclude_unset=True,
        openapi_extra={"responses": {201: {"links": links}}},
    )
    def create_entry(request: AdminRequest, payload: SkipValidation[create_schema]) -> Any:  # type: ignore[valid-type]
        holder, author = request.runtime.holder, author_of(request)
        if is_form(request):
            return submit(
                request,
                resource_form(request, resource, None),
                lambda body: store.create_item(holder, resource, body, author),
                shown_again(request),
                lambda body: item_url(body[key_name]),
            )
        data = cast(dict[str, Any], payload)  # unvalidated (SkipValidation): the store checks it
        result = store.create_item(holder, resource, data, author)
        assert result.key is not None
        return written(request, item_url(result.key), Status(201, result.entry))

    @router.get(
        "/new",
        response={200: None, 403: ErrorOut},
        operation_id=f"new_{section}_form",
        url_name=f"{section}_new",
        summary=f"HTML form for a new {singular}",
        openapi_extra={"responses": HTML_PAGE},
    )
    def new_form(request: AdminRequest) -> HttpResponse:
        return form_page(request, resource, empty_form(request, resource))

    @router.get(
        item_path,
        response={200: schema, **errors(404)},
        operation_id=f"read_{section}",
        url_name=f"{section}_read",
        summary=f"Read a {singular}",
        exclude_unset=True,
    )
    def read_entry(request: AdminRequest, response: HttpResponse, key: str = key_param()) -> Any:
        item = store.entry(request.runtime.holder, resource, key)
        etag = store.entry_etag(item)
        response["ETag"] = etag
        more: dict[str, Any] = {}
        if is_html(request):
            more["states"] = [
                (
                    column.title,
                    column.summaries(request).get(key, column.missing),
                    reverse(f"admin:{column.url_name}", args=[key]) if column.url_name else None,
                )
                for column in columns
            ]
            if details is not None:
                more = {**more, **details.context(request, key), "details": details.template}
        answer = respond(
            request,
            item,
            "adminui/item.html",
            resource=resource,
            key=key,
            fields=tables.fields(item),
            etag=etag,
            **more,
        )
        if isinstance(answer, HttpResponse):
            answer["ETag"] = etag
        return answer

    @router.get(
        f"{item_path}/edit",
        response={200: None, **errors(404)},
        operation_id=f"edit_{section}_form",
        url_name=f"{section}_edit",
        summary=f"HTML form to edit a {singular}",
        openapi_extra={"responses": HTML_PAGE},
    )
    def edit_page(request: AdminRequest, key: str = key_param()) -> HttpResponse:
        form, etag = edit_form(request, resource, key)
        return form_page(request, resource, form, if_match=etag)

    @router.put(
        item_path,
        response={200: schema, **errors(404, 412, 422, 503)},
        operation_id=f"update_{section}",
        url_name=f"{section}_update",
        summary=f"Replace a {singular}",
        exclude_unset=True,
    )
    def update_entry(
        request: AdminRequest,
        payload: SkipValidation[schema],  # type: ignore[valid-type]
        key: str = key_param(),
        if_match: str | None = Header(None, alias="If-Match"),
    ) -> Any:
        holder, author = request.runtime.holder, author_of(request)
        if is_form(request):
            return submit(
                request,
                resource_form(request, resource, key),
                lambda body: store.replace_item(holder, resource, key, body, author, if_match),
                shown_again(request),
                lambda _: item_url(key),
            )
        result = store.replace_item(holder, resource, key, payload, author, if_match)
        return written(request, item_url(key), result.entry)

    @router.delete(
        item_path,
        response={204: None, **errors(404, 412, 422, 503)},
        operation_id=f"delete_{section}",
        url_name=f"{section}_delete",
        summary=f"Delete a {singular}",
    )
    def delete_entry(
        request: AdminRequest,
        key: str = key_param(),
        if_match: str | None = Header(None, alias="If-Match"),
    ) -> Any:
        store.delete_item(request.runtime.holder, resource, key, author_of(request), if_match)
        return written(request, reverse(f"admin:{section}"))

    return router
