"""A dialect's routes: a NinjaAPI of its own, whose failures leave in the dialect's
error shape."""

from collections.abc import Callable
from typing import Any

from django.http import HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import HttpError, ValidationError
from ninja.parser import Parser

from inference.neutral.errors import ApiError, invalid_request
from inference.serving.body_errors import body_error
from inference.serving.context import InferenceRequest


class ApiParser(Parser):
    """JSON bodies; one over 1 MiB arrives parsed off the event loop (``parsed_body``)."""

    def parse_body(self, request: HttpRequest) -> Any:
        parsed = getattr(request, "parsed_body", None)
        if parsed is None:
            return super().parse_body(request)
        if isinstance(parsed, ValueError):
            raise parsed
        return parsed


def dialect_api(name: str, required: Callable[[str], str]) -> NinjaAPI:
    """A dialect's routes, whose failures leave in the dialect's shape (the request's
    ``dialect``). ``required``: what a body at a path needs at least, for the 400 of a
    body that is not an object."""
    api = NinjaAPI(
        urls_namespace=name,
        docs_url=None,
        openapi_url=None,
        title=f"Gateway {name}",
        parser=ApiParser(),
    )

    def api_error(request: InferenceRequest, error: ApiError) -> HttpResponse:
        request.log.error = error.code or error.error_type
        return request.dialect.error_response(error)

    def validation_error(request: InferenceRequest, error: ValidationError) -> HttpResponse:
        return request.dialect.error_response(body_error(error.errors, required(request.path)))

    def http_error(request: InferenceRequest, error: HttpError) -> HttpResponse:
        if error.status_code == 400:
            failure = invalid_request("The request body is not valid JSON", code="invalid_json")
        else:
            failure = ApiError(error.status_code, str(error))
        return request.dialect.error_response(failure)

    api.add_exception_handler(ApiError, api_error)  # type: ignore[arg-type]
    api.add_exception_handler(ValidationError, validation_error)  # type: ignore[arg-type]
    api.add_exception_handler(HttpError, http_error)  # type: ignore[arg-type]
    return api
