"""Failures of admin requests, in the representation the request asked for."""

from collections.abc import Sequence

from django.http import (
    HttpRequest,
    HttpResponse,
    HttpResponseBase,
    HttpResponseNotAllowed,
    HttpResponseNotFound,
    HttpResponseServerError,
)

from adminui.formpages import rejected_form
from adminui.negotiation import is_html, json_response, render
from gateway.asyncmiddleware import AsyncMiddleware

_TYPES = {
    400: "invalid_request_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "conflict_error",
    412: "precondition_failed",
    422: "validation_error",
}
# Django's own answers (no route, no such method, an unhandled exception): (message, code).
_DJANGO_ERRORS: dict[int, tuple[str, str]] = {
    404: ("nothing at {path}", "not_found"),
    405: ("{method} is not allowed on {path}", "method_not_allowed"),
    500: ("the admin failed to handle the request (the server log has the details)", "internal"),
}
_DJANGO_RESPONSES = (HttpResponseNotFound, HttpResponseNotAllowed, HttpResponseServerError)


def is_admin_path(path: str) -> bool:
    return path == "/admin" or path.startswith("/admin/")


def error_response(
    request: HttpRequest,
    status: int,
    message: str,
    code: str,
    problems: Sequence[str] = (),
) -> HttpResponse:
    if is_html(request):
        page = rejected_form(request, list(problems) or [message], status)
        if page is not None:
            return page
        context = {"status": status, "message": message, "problems": problems}
        return render(request, "adminui/error.html", context, status=status).render()
    body = {
        "error": {
            "type": _TYPES.get(status, "api_error"),
            "message": message,
            "code": code,
            "param": None,
            "problems": list(problems),
        }
    }
    return json_response(body, status=status)


class AdminErrorMiddleware(AsyncMiddleware):
    """Re-renders Django's own 404, 405 and 500 responses on ``/admin`` like every other
    admin error (a JSON error object, or the admin's error page)."""

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = await self.get_response(request)
        if not isinstance(response, _DJANGO_RESPONSES) or not is_admin_path(request.path):
            return response
        template, code = _DJANGO_ERRORS[response.status_code]
        message = template.format(method=request.method, path=request.path)
        answer = error_response(request, response.status_code, message, code)
        if response.has_header("Allow"):
            answer["Allow"] = response["Allow"]
        return answer
