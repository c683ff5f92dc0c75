"""The middleware of ``/v1``: credentials before anything else, and every failure in the
OpenAI error shape, whatever part of Django produced it."""

from typing import cast

from django.http import HttpRequest, HttpResponseBase

from core.asyncmiddleware import AsyncMiddleware
from inference.auth import authenticate
from inference.context import InferenceRequest
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


class ProxyAuthMiddleware(AsyncMiddleware):
    """``auth.proxy`` on every ``/v1`` route, before the body is parsed (DESIGN 4.1).

    A middleware rather than the views: ninja parses and validates the body before a view
    runs, which an unauthenticated client could make arbitrarily expensive.
    """

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if not is_v1_path(request.path):
            return await self.get_response(request)
        v1_request = cast(InferenceRequest, request)
        v1_request.bound_user = None
        config = v1_request.runtime.holder.config
        scope = config.auth.proxy if config is not None and config.auth is not None else None
        if scope is not None:
            try:
                principal = await authenticate(request.headers.get("Authorization"), scope)
            except ApiError as error:
                v1_request.log.error = error.code or error.error_type
                return error.response()
            if scope.bind_user:
                v1_request.bound_user = principal
        return await self.get_response(request)


def is_v1_path(path: str) -> bool:
    return path == "/v1" or path.startswith("/v1/")
