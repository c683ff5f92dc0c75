"""Errors as responses: the OpenAI error object (chat completions, Responses and
embeddings answer in it; other dialects bring their own shape), and what every error
response carries whatever its shape."""

import json
from collections.abc import Callable
from typing import Any

from django.http import HttpResponse

from inference.neutral.errors import ApiError

# An error's status and body in one dialect's shape.
type ErrorShape = Callable[[ApiError], tuple[int, dict[str, Any]]]


def openai_error(error: ApiError) -> tuple[int, dict[str, Any]]:
    """``{"error": {"type", "message", "code", "param"}}``."""
    body = {
        "error": {
            "type": error.error_type,
            "message": error.message,
            "code": error.code,
            "param": error.param,
        }
    }
    return error.status, body


# Statuses no retry can change: clients (the Anthropic and OpenAI SDKs, Claude Code) are
# told so, or some retry a 401 silently for minutes.
_FINAL_STATUSES = frozenset({400, 401, 403, 404, 413, 422})


def error_response(error: ApiError, shape: ErrorShape) -> HttpResponse:
    """The response of ``error`` in ``shape``, with the headers the error carries, and
    ``x-should-retry: false`` where retrying cannot help."""
    status, body = shape(error)
    response = HttpResponse(json.dumps(body), status=status, content_type="application/json")
    for name, value in error.headers.items():
        response[name] = value
    if status in _FINAL_STATUSES or error.final:
        response["x-should-retry"] = "false"
    return response
