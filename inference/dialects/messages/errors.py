"""Failures as the Anthropic Messages API names them: ``{"type": "error", "error":
{"type", "message"}}``, and its 529 for an upstream's overload."""

from typing import Any

from inference.neutral.errors import ApiError

_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
}
OVERLOADED = 529


def anthropic_error(error: ApiError) -> tuple[int, dict[str, Any]]:
    if error.code == "upstream_overloaded":
        status, kind = OVERLOADED, "overloaded_error"
    else:
        status, kind = error.status, _TYPES.get(error.status, "api_error")
    return status, {"type": "error", "error": {"type": kind, "message": error.message}}
