"""HTML form writes: the create and edit pages, and a write submitted from one of them.

Each route decodes the form of the page that sent it. A form the write pipeline
refuses comes back with the problems next to the fields they name and the status of
the refusal; an accepted one redirects.
"""

from collections.abc import Callable
from typing import Any, Protocol

from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse

from adminui.context import AdminRequest
from adminui.editing.forms import FORMS, ResourceForm
from adminui.rendering.bodies import form_data, normalised
from adminui.rendering.errors import refusal
from adminui.rendering.negotiation import render, written
from agents import store
from agents.loader import ConfigError
from agents.resources import Resource
from agents.store import StoreError, Written


class SubmittedForm(Protocol):
    def is_valid(self) -> bool: ...
    def body(self) -> dict[str, Any]: ...
    def show_problems(self, problems: list[str]) -> None: ...


FormPage = Callable[[Any, int], HttpResponse]


def submit(
    request: AdminRequest,
    form: SubmittedForm,
    write: Callable[[dict[str, Any]], Written],
    page: FormPage,
    location: Callable[[dict[str, Any]], str],
) -> HttpResponse:
    """Run ``write`` with the form's data, then redirect to ``location`` (of that data);
    the form again, with its problems, if the form or the write was refused."""
    if not form.is_valid():
        return page(form, 400)
    body = normalised(form.body())  # browsers send \r\n from text areas
    try:
        write(body)
    except (StoreError, ConfigError) as error:
        refused = refusal(error)
        form.show_problems(refused.problems or [refused.message])
        shown = page(form, refused.status)
        for name, value in refused.headers.items():
            shown[name] = value
        return shown
    return written(request, location(body))


def resource_form(request: AdminRequest, resource: Resource, key: str | None) -> ResourceForm:
    """The submitted form of ``resource`` (a new entry when ``key`` is None)."""
    config = store.read_file(request.runtime.holder).data
    return FORMS[resource.section](form_data(request), config=config, key=key)


def empty_form(request: AdminRequest, resource: Resource) -> ResourceForm:
    return FORMS[resource.section](config=store.read_file(request.runtime.holder).data)


def edit_form(request: AdminRequest, resource: Resource, key: str) -> tuple[ResourceForm, str]:
    holder = request.runtime.holder
    item = store.entry(holder, resource, key)
    form_class = FORMS[resource.section]
    initial = form_class.initial_from(item, key)
    form = form_class(initial=initial, config=store.read_file(holder).data, key=key)
    return form, store.entry_etag(item)


def form_page(
    request: AdminRequest,
    resource: Resource,
    form: ResourceForm,
    status: int = 200,
    if_match: str | None = None,
) -> TemplateResponse:
    key = form.key
    section = resource.section
    action = reverse(f"admin:{section}_read", args=[key]) if key else reverse(f"admin:{section}")
    return render(
        request,
        "adminui/form.html",
        {"resource": resource, "form": form, "key": key, "action": action, "if_match": if_match},
        status=status,
    )
