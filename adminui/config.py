"""The whole file: ``GET``/``PUT /admin/config`` with ``ETag``/``If-Match``."""

from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import Header, Router
from pydantic import SkipValidation

from adminui import negotiation
from adminui.collection_routes import author_of, errors
from adminui.forms import ConfigForm
from adminui.negotiation import FORM_TYPES, JSON, json_response, render, written
from adminui.parsers import YAML_TYPES
from agents import store
from agents.schema import Config
from gateway import runtime

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
def read_config(request: HttpRequest) -> HttpResponse:
    holder = runtime.current().holder
    kind = _representation(request)
    if kind == "json":
        data, etag = store.masked_config_data(holder)
        response = json_response(data)
    else:
        text, etag = store.masked_config_text(holder)
        if kind == "yaml":
            response = HttpResponse(text, content_type=f"{YAML}; charset=utf-8")
        else:
            form = ConfigForm(initial={"text": text})
            response = render(request, "adminui/config.html", {"form": form, "etag": etag}).render()
    response["ETag"] = etag
    return response


@router.put(
    "/config",
    response={204: None, **errors(412, 422)},
    operation_id="replace_config",
    url_name="config_replace",
    summary="Replace the config file (YAML text kept as sent; JSON merged into the file)",
    openapi_extra={"responses": {204: {"headers": {"ETag": {"schema": {"type": "string"}}}}}},
)
def replace_config(
    request: HttpRequest,
    payload: SkipValidation[Config],
    if_match: str | None = Header(None, alias="If-Match"),
) -> HttpResponse:
    text: str | None = None
    if request.content_type in FORM_TYPES:
        text = payload["text"]
    elif request.content_type in YAML_TYPES:
        text = request.body.decode("utf-8")
    etag = store.replace_config(
        runtime.current().holder,
        author_of(request),
        text=text,
        data=None if text is not None else payload,
        if_match=if_match,
    )
    response: Any = written(request, "/admin/config")
    response["ETag"] = etag
    return response


def _representation(request: HttpRequest) -> str:
    if negotiation.representation(request) is negotiation.Representation.FRAGMENT:
        return "html"
    preferred = request.get_preferred_type([YAML, JSON, "text/html"])
    return {JSON: "json", "text/html": "html"}.get(preferred or YAML, "yaml")
