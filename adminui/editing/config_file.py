"""The whole file: ``GET``/``PUT /admin/config`` with ``ETag``/``If-Match``."""

from typing import Any, cast

from django.http import HttpResponse
from django.template.response import TemplateResponse
from django.urls import reverse
from ninja import Router
from ninja.params.functions import Header  # callable; ninja.Header is typed as Annotated
from pydantic import SkipValidation

from adminui.context import AdminRequest
from adminui.editing.collections import author_of
from adminui.editing.formpages import submit
from adminui.editing.forms import ConfigForm
from adminui.rendering import negotiation
from adminui.rendering.bodies import form_data, is_yaml, yaml_text
from adminui.rendering.negotiation import JSON, is_form, json_response, render, written
from adminui.schemas import errors
from agents import store
from agents.schema import Config

YAML = "application/yaml"
router = Router(tags=["config"])

_GET_CONTENT = {
    200: {
        "description": "The config file, secrets masked",
        "headers": {"ETag": {"schema": {"type": "string"}}},
        "content": {
            YAML: {"schema": {"type": "string"}},
            "text/html": {"schema": {"type": "string"}},
        },
    }
}


@router.get(
    "/config",
    response={200: Config, **errors()},
    operation_id="read_config",
    url_name="config",
    summary="Read the config file (YAML by default, JSON with Accept: application/json)",
    openapi_extra={"responses": _GET_CONTENT},
)
def read_config(request: AdminRequest) -> HttpResponse:
    holder = request.runtime.holder
    kind = _representation(request)
    if kind == "json":
        data, etag = store.masked_config_data(holder)
        response = json_response(data)
    else:
        text, etag = store.masked_config_text(holder)
        if kind == "yaml":
            response = HttpResponse(text, content_type=f"{YAML}; charset=utf-8")
        else:
            response = _editor(request, ConfigForm(initial={"text": text}), etag).render()
    response["ETag"] = etag
    return response


@router.put(
    "/config",
    response={204: None, **errors(412, 422, 503)},
    operation_id="replace_config",
    url_name="config_replace",
    summary="Replace the config file (YAML text kept as sent; JSON merged into the file)",
    openapi_extra={"responses": {204: {"headers": {"ETag": {"schema": {"type": "string"}}}}}},
)
def replace_config(
    request: AdminRequest,
    payload: SkipValidation[Config],
    if_match: str | None = Header(None, alias="If-Match"),
) -> HttpResponse:
    holder, author = request.runtime.holder, author_of(request)
    if is_form(request):
        return submit(
            request,
            ConfigForm(form_data(request)),
            lambda body: store.replace_config(holder, author, text=body["text"], if_match=if_match),
            lambda form, status: _editor(request, form, if_match, status),
            lambda _: reverse("admin:config"),
        )
    if is_yaml(request):
        result = store.replace_config(holder, author, text=yaml_text(request), if_match=if_match)
    else:
        data = cast(dict[str, Any], payload)  # unvalidated (SkipValidation): the store checks it
        result = store.replace_config(holder, author, data=data, if_match=if_match)
    response = written(request, reverse("admin:config"))
    response["ETag"] = result.etag
    return response


def _editor(
    request: AdminRequest, form: ConfigForm, etag: str | None, status: int = 200
) -> TemplateResponse:
    live = request.runtime.holder.config
    warnings = live.warnings if live is not None else ()
    context = {"form": form, "etag": etag, "warnings": warnings}
    return render(request, "adminui/config.html", context, status=status)


def _representation(request: AdminRequest) -> str:
    if negotiation.representation(request) is negotiation.Representation.FRAGMENT:
        return "html"
    preferred = request.get_preferred_type([YAML, JSON, "text/html"])
    return {JSON: "json", "text/html": "html"}.get(preferred or YAML, "yaml")
