"""One route, three representations: a full page, an htmx fragment, or JSON.

Reads follow the ``Accept`` header (JSON when it is preferred over HTML). Writes sent as
JSON or YAML answer JSON; form writes answer like HTML forms do (303 to the page, or 204
with ``HX-Redirect`` for htmx).
"""

import json
from enum import Enum
from typing import Any, overload

from django.http import HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django_htmx.http import HttpResponseClientRedirect

from adminui.context import AdminRequest

HTML = "text/html"
JSON = "application/json"
FORM_TYPES = frozenset({"application/x-www-form-urlencoded"})
BROWSER_FORM_TYPES = frozenset({"multipart/form-data", "text/plain"})


class Representation(Enum):
    PAGE = "page"
    FRAGMENT = "fragment"
    JSON = "json"


def representation(request: AdminRequest) -> Representation:
    if request.htmx:
        return Representation.FRAGMENT
    if request.method in ("GET", "HEAD") or is_form(request) or _from_a_browser_form(request):
        preferred = request.get_preferred_type([HTML, JSON])
        return Representation.JSON if preferred == JSON else Representation.PAGE
    return Representation.JSON


def is_html(request: AdminRequest) -> bool:
    return representation(request) is not Representation.JSON


def is_form(request: AdminRequest) -> bool:
    return request.content_type in FORM_TYPES


def _from_a_browser_form(request: AdminRequest) -> bool:
    """The other bodies an HTML form can send (the admin's forms do not): answered like
    forms, so a browser shows why such a request was refused."""
    return request.content_type in BROWSER_FORM_TYPES


def respond(
    request: AdminRequest, data: Any, template: str, status: int = 200, **context: Any
) -> Any:
    """``data`` for ninja to validate and render as JSON, or the page/fragment showing it."""
    if not is_html(request):
        return data
    return render(request, template, {"data": data, **context}, status=status)


def render(
    request: AdminRequest, template: str, context: dict[str, Any], status: int = 200
) -> TemplateResponse:
    """The full page, or only its ``content`` partial for htmx."""
    name = template
    if representation(request) is Representation.FRAGMENT:
        name = f"{template}#content"
    return TemplateResponse(request, name, context, status=status)


@overload
def written(request: AdminRequest, location: str, data: None = None) -> HttpResponse: ...
@overload
def written(request: AdminRequest, location: str, data: Any) -> Any: ...
def written(request: AdminRequest, location: str, data: Any = None) -> Any:
    """The answer to a successful write: JSON data, or a redirect to ``location``."""
    kind = representation(request)
    if kind is Representation.JSON:
        return data if data is not None else HttpResponse(status=204)
    if kind is Representation.FRAGMENT:
        return HttpResponseClientRedirect(location, status=204)
    return HttpResponseRedirect(location, status=303)


def json_response(data: Any, status: int = 200) -> HttpResponse:
    return HttpResponse(json.dumps(data), status=status, content_type=JSON)
