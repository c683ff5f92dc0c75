"""The live state of the MCP servers: a column of the MCP pages, and
``/admin/mcp/{name}/state`` (connected or not, the tools listed, the last error)."""

from dataclasses import asdict
from datetime import datetime
from typing import Any

from ninja import Router
from pydantic import BaseModel

from adminui.context import AdminRequest
from adminui.rendering.errors import AdminError
from adminui.rendering.negotiation import respond
from adminui.schemas import errors


class McpStateOut(BaseModel):
    name: str
    transport: str
    state: str
    tools: list[str]
    last_error: str
    since: datetime


def summaries(request: AdminRequest) -> dict[str, str]:
    """Each server's state in a few words, by name."""
    return {status.name: status.summary for status in request.runtime.mcp_status()}


def add_state_route(router: Router) -> None:
    @router.get(
        "/{name}/state",
        response={200: McpStateOut, **errors(404)},
        operation_id="read_mcp_state",
        url_name="mcp_state",
        summary="Whether the MCP server is connected, its tools and its last error",
    )
    def read_state(request: AdminRequest, name: str) -> Any:
        found = next((s for s in request.runtime.mcp_status() if s.name == name), None)
        if found is None:
            raise AdminError(404, f"MCP server '{name}' is not running", "not_found")
        data = {**asdict(found), "tools": list(found.tools)}
        return respond(request, data, "adminui/mcp_state.html", status_text=found.summary)
