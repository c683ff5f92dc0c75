"""Failures of admin requests, in the representation the request asked for."""

from collections.abc import Sequence

from django.http import HttpRequest, HttpResponse

from adminui.formpages import rejected_form
from adminui.negotiation import is_html, json_response, render

_TYPES = {
    400: "invalid_request_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    409: "conflict_error",
    412: "precondition_failed",
    422: "validation_error",
}


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
