"""Failures as Google's APIs name them: ``{"error": {"code", "message", "status"}}``, the
status a canonical gRPC code.

Gemini CLI reads no ``x-should-retry``: what stops it is the error itself. A wait
(``Retry-After``) is Google's ``RetryInfo`` detail, which it honours, and a final 429
always has one (a budget that never renews: a day, longer than the CLI waits, so it stops
at once with the gateway's message). It retries every 5xx, so a final one (a reply that
never matched its format) is ``FAILED_PRECONDITION``, 400."""

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


_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"
_NEVER_RENEWS_SECONDS = 86400


def google_error(error: ApiError) -> tuple[int, dict[str, Any]]:
    code = error.status
    if error.final and code >= 500:
        code = 400
        status = "FAILED_PRECONDITION"
    else:
        status = _STATUSES.get(code, "UNKNOWN")
    body: dict[str, Any] = {"code": code, "message": error.message, "status": status}
    wait = error.headers.get("Retry-After")
    if wait is None and error.final and code == 429:
        wait = str(_NEVER_RENEWS_SECONDS)
    if wait is not None:
        body["details"] = [{"@type": _RETRY_INFO, "retryDelay": f"{wait}s"}]
    return code, {"error": body}
