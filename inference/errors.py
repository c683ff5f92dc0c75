"""OpenAI-style errors: every failure on ``/v1`` leaves as one of these."""

import json
from typing import Any

from django.http import HttpResponse

from inference.providers.types import Usage

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
# The same failures as the Anthropic Messages API names them (its 529 is an overload).
_ANTHROPIC_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    405: "invalid_request_error",
    413: "request_too_large",
    429: "rate_limit_error",
}
OVERLOADED = 529
ANTHROPIC_PATH = "/v1/messages"  # the routes that answer in Anthropic's shapes


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        param: str | None = None,
        error_type: str | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.code = code
        self.param = param
        self.error_type = error_type or _DEFAULT_TYPES.get(status, "api_error")
        self.headers = headers or {}

    def body(self) -> dict[str, Any]:
        return {
            "error": {
                "type": self.error_type,
                "message": self.message,
                "code": self.code,
                "param": self.param,
            }
        }

    def anthropic(self) -> tuple[int, dict[str, Any]]:
        """(status, body) as the Anthropic Messages API answers this failure."""
        if self.code == "upstream_overloaded":
            status, kind = OVERLOADED, "overloaded_error"
        else:
            status = self.status
            kind = _ANTHROPIC_TYPES.get(status, "api_error")
        return status, {"type": "error", "error": {"type": kind, "message": self.message}}

    def response(self, path: str = "") -> HttpResponse:
        """The error response, in Anthropic's shape on its routes (``path``)."""
        status, body = (
            self.anthropic() if path.startswith(ANTHROPIC_PATH) else (self.status, self.body())
        )
        response = HttpResponse(json.dumps(body), status=status, content_type="application/json")
        for name, value in self.headers.items():
            response[name] = value
        return response


class ToolFailed(Exception):
    """A tool call of the agent's own that did not succeed: the message is what the model
    is told instead of a result; ``usage`` is what it spent (a subagent's calls)."""

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or Usage()


def invalid_request(message: str, param: str | None = None, code: str | None = None) -> ApiError:
    return ApiError(400, message, param=param, code=code or "invalid_request")
