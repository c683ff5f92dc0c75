"""Failures of admin requests: their statuses, and their answer in the representation the
request asked for (a JSON error object, or the admin's error page)."""

from collections.abc import Sequence
from typing import cast

from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    HttpResponseNotAllowed,
    HttpResponseNotFound,
    HttpResponseServerError,
)

from adminui.context import AdminRequest
from adminui.rendering.negotiation import is_html, json_response, render
from agents.loader import ConfigError
from agents.schema import Config
from agents.store import (
    Busy,
    EntryNotFound,
    Forbidden,
    InvalidChange,
    NameTaken,
    StoreError,
    VersionMismatch,
)
from core.asyncmiddleware import AsyncMiddleware
from core.bodylimit import too_large

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "conflict_error",
    412: "precondition_failed",
    422: "validation_error",
    503: "service_unavailable",
}
# What each refusal of the config store answers: (status, code).
_STORE_REFUSALS: dict[type[StoreError], tuple[int, str]] = {
    InvalidChange: (400, "bad_request"),
    EntryNotFound: (404, "not_found"),
    Forbidden: (403, "open_admin_forbidden"),
    NameTaken: (409, "name_taken"),
    VersionMismatch: (412, "etag_mismatch"),
    Busy: (503, "config_busy"),
}
# Headers of the refusals that have some (a lock held too long: retry in a second).
_STORE_HEADERS: dict[type[StoreError], dict[str, str]] = {Busy: {"Retry-After": "1"}}
# Django's own answers (no route, no such method, an unhandled exception): (message, code).
_DJANGO_ERRORS: dict[int, tuple[str, str]] = {
    404: ("nothing at {path}", "not_found"),
    405: ("{method} is not allowed on {path}", "method_not_allowed"),
    500: ("the admin failed to handle the request (the server log has the details)", "internal"),
}
_DJANGO_RESPONSES = (HttpResponseNotFound, HttpResponseNotAllowed, HttpResponseServerError)


class AdminError(Exception):
    """An admin request that cannot be served: its status, code and message."""

    def __init__(
        self,
        status: int,
        message: str,
        code: str,
        problems: Sequence[str] = (),
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.problems = list(problems)
        self.headers = headers or {}


def refusal(error: StoreError | ConfigError) -> AdminError:
    """The admin's answer to a write the config store or the validator refused."""
    if isinstance(error, ConfigError):
        return AdminError(422, str(error), "invalid_config", error.problems)
    status, code = _STORE_REFUSALS[type(error)]
    return AdminError(status, error.message, code, headers=_STORE_HEADERS.get(type(error)))


def error_response(request: AdminRequest, error: AdminError) -> HttpResponse:
    if is_html(request):
        context = {"status": error.status, "message": error.message, "problems": error.problems}
        page = render(request, "adminui/error.html", context, status=error.status).render()
        return _with_headers(page, error)
    body = {
        "error": {
            "type": _TYPES.get(error.status, "api_error"),
            "message": error.message,
            "code": error.code,
            "param": None,
            "problems": error.problems,
        }
    }
    return _with_headers(json_response(body, status=error.status), error)


def _with_headers(response: HttpResponse, error: AdminError) -> HttpResponse:
    for name, value in error.headers.items():
        response[name] = value
    return response


def is_admin_path(path: str) -> bool:
    return path == "/admin" or path.startswith("/admin/")


def loaded_config(request: AdminRequest) -> Config:
    """The config the process serves; a 503 while none is valid."""
    config = request.runtime.holder.config
    if config is None:
        raise AdminError(
            503, "No valid config is loaded: fix the config file first", "config_unavailable"
        )
    return config


class AdminErrorMiddleware(AsyncMiddleware):
    """Re-renders Django's own 404, 405 and 500 responses on ``/admin`` like every other
    admin error, and answers a body the gate in front of Django found too large (413)."""

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        limit = too_large(request)
        if limit is not None and is_admin_path(request.path):
            message = f"admin request bodies are limited to {limit} bytes"
            error = AdminError(413, message, "request_too_large")
            return error_response(cast(AdminRequest, request), error)
        response = await self.get_response(request)
        if not isinstance(response, _DJANGO_RESPONSES) or not is_admin_path(request.path):
            return response
        template, code = _DJANGO_ERRORS[response.status_code]
        message = template.format(method=request.method, path=request.path)
        error = AdminError(response.status_code, message, code)
        answer = error_response(cast(AdminRequest, request), error)
        if response.has_header("Allow"):
            answer["Allow"] = response["Allow"]
        return answer
