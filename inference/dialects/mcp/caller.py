"""Where a call finds the HTTP request that carried it: the view puts the request in the
ASGI scope it hands the SDK, and the SDK gives the tools that scope's request."""

from typing import Any

from inference.serving.context import InferenceRequest

CALLER = "gateway.mcp_caller"


def caller_of(request: Any) -> InferenceRequest:
    """The HTTP request behind an SDK request (``ctx.request``)."""
    scope = getattr(request, "scope", None)
    if scope is None or CALLER not in scope:
        raise RuntimeError("an MCP call without the HTTP request that carried it")
    caller: InferenceRequest = scope[CALLER]
    return caller
