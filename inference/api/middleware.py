"""The middleware of the API: credentials before anything else, and every failure in the
error shape of the request's dialect, whatever part of Django produced it."""

import asyncio
import json
from collections.abc import Callable
from typing import Any, cast

from django.http import HttpRequest, HttpResponseBase

from agents.schema import Config
from core.asyncmiddleware import AsyncMiddleware
from core.bodylimit import MIB, too_large, without_body
from inference.dialects.registry import dialect_of
from inference.neutral.errors import ApiError
from inference.serving.auth import KeyCache, authenticate_caller
from inference.serving.context import InferenceRequest

_MESSAGES = {
    404: "Unknown route {method} {path}",
    405: "Method {method} is not allowed on {path}",
    500: "The gateway failed to handle the request",
}
_CODES = {404: "unknown_route", 405: "method_not_allowed", 500: "internal_error"}


class ErrorShapeMiddleware(AsyncMiddleware):
    """Turns Django's HTML or plain-text error responses (an unknown route, a method not
    allowed, a crash) into error objects of the request's dialect."""

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        response = await self.get_response(request)
        if response.status_code < 400:
            return response
        if response.get("Content-Type", "").startswith("application/json"):
            return response
        status = response.status_code
        template = _MESSAGES.get(status, "The request failed with status {status}")
        message = template.format(method=request.method, path=request.path, status=status)
        error = ApiError(status, message, code=_CODES.get(status))
        if status == 405 and response.has_header("Allow"):
            error.headers["Allow"] = response["Allow"]
        return cast(InferenceRequest, request).dialect.error_response(error)


class ProxyAuthGate:
    """``auth.proxy`` on every API route, before the body is read.

    An ASGI wrapper around Django rather than a middleware: Django reads the whole body
    before any middleware runs, and ninja parses it before any view does, both of which
    an unauthenticated client could make arbitrarily expensive. A refused request goes on
    into Django with an empty body and the refusal in its scope, so it is answered, logged
    and counted like any other (``ProxyAuthMiddleware``). The dialect of the path says
    where its credential is. A credential in the URL (Gemini's ``?key=``) is taken out of
    the query here, once read, auth.proxy or not: nothing after it (Django, the log line,
    the request's record, its spans, an error's text) sees it.
    """

    def __init__(self, app: Any, config: Callable[[], Config | None]) -> None:
        self.app = app
        self.config = config
        self.keys = KeyCache()

    async def __call__(self, scope: dict[str, Any], receive: Any, send: Any) -> None:
        config = self.config()
        proxy = config.proxy_auth if config is not None else None
        dialect = dialect_of(scope["path"]) if scope["type"] == "http" else None
        if dialect is None:
            await self.app(scope, receive, send)
            return
        credential = dialect.credentials(scope)
        query = scope.get("query_string", b"").decode("latin-1")
        # Read: nothing after this sees the credential in the URL.
        scope = {**scope, "query_string": dialect.without_secrets(query).encode("latin-1")}
        if proxy is None:
            await self.app(scope, receive, send)
            return
        try:
            caller = await authenticate_caller(credential, proxy, self.keys)
        except ApiError as refusal:
            await self.app({**scope, _REFUSAL: refusal}, without_body(receive), send)
            return
        # A key's user is always the request's; another principal only with bind_user.
        bound = caller.principal if proxy.bind_user or caller.key is not None else None
        await self.app({**scope, _PRINCIPAL: bound, _KEY: caller.key}, receive, send)


class ProxyAuthMiddleware(AsyncMiddleware):
    """Answers the requests the gates in front of Django refused (a body over the limit,
    then credentials), hands on the principal, and parses a body over 1 MiB off the event
    loop."""

    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        api_request = cast(InferenceRequest, request)
        scope = getattr(request, "scope", {})
        limit = too_large(request)
        refusal: ApiError | None = scope.get(_REFUSAL)
        if limit is not None and api_request.dialect.uploads:
            refusal = ApiError(
                413,
                f"The file is larger than files.max_file_mb ({limit} bytes with the form)",
                param="file",
                code="file_too_large",
            )
        elif limit is not None:
            refusal = ApiError(
                413,
                f"The request body is larger than limits.max_body_mb ({limit} bytes)",
                code="request_too_large",
            )
        if refusal is not None:
            api_request.log.error = refusal.code or refusal.error_type
            return api_request.dialect.error_response(refusal)
        api_request.bound_user = scope.get(_PRINCIPAL)
        api_request.api_key = scope.get(_KEY)
        api_request.parsed_body = None
        if int(request.META.get("CONTENT_LENGTH") or 0) > MIB and not api_request.dialect.uploads:
            api_request.parsed_body = await asyncio.to_thread(_parsed, request)
        return await self.get_response(request)


def _parsed(request: HttpRequest) -> Any:
    try:
        return json.loads(request.body)
    except ValueError as error:  # the view's parser raises it, as for any other body
        return error
    except RecursionError:  # nested deeper than the parser goes: as malformed
        return ValueError("The request body is nested too deeply")


_REFUSAL = "gateway.auth_refusal"
_PRINCIPAL = "gateway.principal"
_KEY = "gateway.api_key"
