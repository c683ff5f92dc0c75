"""Keep every ``/v1`` failure in the OpenAI error shape, whatever part of Django produced it."""

from django.http import HttpRequest, HttpResponseBase

from core.asyncmiddleware import AsyncMiddleware
from inference.errors import ApiError

_MESSAGES = {
    404: "Unknown route {method} {path}",
    405: "Method {method} is not allowed on {path}",
    500: "The gateway failed to handle the request",
}
_CODES = {404: "unknown_route", 405: "method_not_allowed", 500: "internal_error"}


class OpenAIErrorMiddleware(AsyncMiddleware):
    """Turns Django's HTML or plain-text error responses on ``/v1`` into error objects."""

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = await self.get_response(request)
        if not request.path.startswith("/v1") or response.status_code < 400:
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        status = response.status_code
        template = _MESSAGES.get(status, "The request failed with status {status}")
        message = template.format(method=request.method, path=request.path, status=status)
        error = ApiError(status, message, code=_CODES.get(status))
        if status == 405 and response.has_header("Allow"):
            error.headers["Allow"] = response["Allow"]
        return error.response()
