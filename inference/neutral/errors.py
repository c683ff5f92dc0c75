"""The failures a request can end in, in neutral terms: each dialect renders an
``ApiError`` in its own error shape (``inference.serving.errors`` and the dialects')."""

_DEFAULT_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "invalid_request_error",
    429: "rate_limit_exceeded",
    500: "server_error",
    502: "upstream_error",
    503: "upstream_error",
    504: "upstream_error",
}


class ApiError(Exception):
    """A failure the client is told of: its status, message, the family (``error_type``)
    and the specific reason (``code``), the field it concerns (``param``), the
    response headers it carries (``Retry-After``, a challenge), and whether it is
    ``final``: the same request cannot succeed by being sent again on its own (a spent
    budget, a reply that never matched its format), whatever its status says."""

    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        error_type: str | None = None,
        headers: dict[str, str] | None = None,
        final: bool = False,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.error_type = error_type or _DEFAULT_TYPES.get(status, "api_error")
        self.headers = headers or {}
        self.final = final


def invalid_request(message: str, param: str | None = None, code: str | None = None) -> ApiError:
    return ApiError(400, message, param=param, code=code or "invalid_request")
