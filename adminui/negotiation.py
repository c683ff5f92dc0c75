"""One route, three representations: a full page, an htmx fragment, or JSON.

Reads follow the ``Accept`` header (JSON when it is preferred over HTML). Writes sent as
JSON or YAML answer JSON; form writes answer like HTML forms do (303 to the page, or 204
with ``HX-Redirect`` for htmx).
"""

import json
from enum import Enum
from typing import Any

from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse

from adminui.pages import page_context

HTML = "text/html"
JSON = "application/json"
FORM_TYPES = frozenset({"application/x-www-form-urlencoded"})


class Representation(Enum):
    PAGE = "page"
    FRAGMENT = "fragment"
    JSON = "json"


def representation(request: HttpRequest) -> Representation:
    if request.headers.get("HX-Request") == "true":
        return Representation.FRAGMENT
    if request.method in ("GET", "HEAD") or request.content_type in FORM_TYPES:
        preferred = request.get_preferred_type([HTML, JSON])
        return Representation.JSON if preferred == JSON else Representation.PAGE
    return Representation.JSON


def is_html(request: HttpRequest) -> bool:
    return representation(request) is not Representation.JSON


def respond(
    request: HttpRequest, data: Any, template: str, status: int = 200, **context: Any
) -> Any:
    """``data`` for ninja to validate and render as JSON, or the page/fragment showing it."""
    if not is_html(request):
        return data
    return render(request, template, {"data": data, **context}, status=status)


def render(
    request: HttpRequest, template: str, context: dict[str, Any], status: int = 200
) -> TemplateResponse:
    """The full page, or only its ``content`` partial for htmx."""
    name = template
    if representation(request) is Representation.FRAGMENT:
        name = f"{template}#content"
    return TemplateResponse(request, name, {**page_context(request), **context}, status=status)


def written(request: HttpRequest, location: str, data: Any = None, status: int = 200) -> Any:
    """The answer to a successful write: JSON data, or a redirect to ``location``."""
    kind = representation(request)
    if kind is Representation.JSON:
        return data if data is not None else HttpResponse(status=204)
    if kind is Representation.FRAGMENT:
        response = HttpResponse(status=204)
        response["HX-Redirect"] = location
        return response
    response = HttpResponse(status=303)
    response["Location"] = location
    return response


def json_response(data: Any, status: int = 200) -> HttpResponse:
    return HttpResponse(json.dumps(data), status=status, content_type=JSON)
