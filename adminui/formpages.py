"""The create and edit pages of the collections, and their answer to a rejected write."""

from typing import Any

from django.http import HttpRequest
from django.template.response import TemplateResponse

from adminui.forms import FORMS, ConfigForm, ResourceForm
from adminui.negotiation import FORM_TYPES, render
from adminui.parsers import form_data
from agents import store
from agents.resources import RESOURCES, Resource
from gateway import runtime


def form_page(
    request: HttpRequest,
    resource: Resource,
    form: ResourceForm,
    status: int = 200,
    if_match: str | None = None,
) -> TemplateResponse:
    key = form.key
    return render(
        request,
        "adminui/form.html",
        {
            "resource": resource,
            "form": form,
            "key": key,
            "action": f"/admin/{resource.section}" + (f"/{key}" if key else ""),
            "if_match": if_match,
        },
        status=status,
    )


def empty_form(resource: Resource) -> ResourceForm:
    return FORMS[resource.section](config=store.read_file(_holder()).data)


def edit_form(resource: Resource, key: str) -> tuple[ResourceForm, str]:
    item = store.entry(_holder(), resource, key)
    form_class = FORMS[resource.section]
    form = form_class(
        initial=form_class.initial_from(item, key), config=store.read_file(_holder()).data, key=key
    )
    return form, store.entry_etag(item)


def rejected_form(request: HttpRequest, problems: list[str], status: int) -> Any:
    """The form again, with the problems inline, when a form write was rejected."""
    if request.content_type not in FORM_TYPES:
        return None
    parts = request.path.removeprefix("/admin/").strip("/").split("/")
    if parts == ["config"]:
        form = ConfigForm(form_data(request))
        if form.is_valid():
            for problem in problems:
                form.add_error(None, problem)
        text = form.data.get("text", "")
        return render(
            request,
            "adminui/config.html",
            {"form": form, "etag": request.headers.get("If-Match"), "text": text},
            status=status,
        )
    resource = RESOURCES.get(parts[0])
    if resource is None or len(parts) > 2:
        return None
    key = parts[1] if len(parts) == 2 else None
    data = store.read_file(_holder()).data
    form = FORMS[resource.section](form_data(request), config=data, key=key)
    if form.is_valid():  # else the form's own errors are the problems
        form.add_problems(problems, _prefix(resource, key, form, data))
    return form_page(request, resource, form, status, request.headers.get("If-Match"))


def _prefix(resource: Resource, key: str | None, form: ResourceForm, data: dict) -> str:
    """Where the written entry sits in the file, as the validator's messages name it."""
    if not resource.is_list:
        return f"{resource.section}.{key or form.data.get(resource.key_field, '')}"
    names = list(resource.entries(data))
    index = names.index(key) if key in names else len(names)
    return f"{resource.section}[{index}]"


def _holder():
    return runtime.current().holder
