"""Failures as Google's APIs name them: ``{"error": {"code", "message", "status"}}``, the
status a canonical gRPC code."""

from typing import Any

from inference.neutral.errors import ApiError

_STATUSES = {
    400: "INVALID_ARGUMENT",
    401: "UNAUTHENTICATED",
    403: "PERMISSION_DENIED",
    404: "NOT_FOUND",
    405: "UNIMPLEMENTED",
    409: "ABORTED",
    413: "INVALID_ARGUMENT",
    429: "RESOURCE_EXHAUSTED",
    500: "INTERNAL",
    501: "UNIMPLEMENTED",
    502: "UNAVAILABLE",
    503: "UNAVAILABLE",
    504: "DEADLINE_EXCEEDED",
}


def google_error(error: ApiError) -> tuple[int, dict[str, Any]]:
    status = _STATUSES.get(error.status, "UNKNOWN")
    return error.status, {
        "error": {"code": error.status, "message": error.message, "status": status}
    }
