"""The users' accounts at MCP servers that sign each user in (docs/mcp.md): list them,
and revoke one (the user connects again at the next call that needs it). Their tokens are
sealed in the database and never shown."""

from datetime import datetime
from typing import Any

from django.urls import reverse
from ninja import Router
from pydantic import BaseModel

from adminui.context import AdminRequest
from adminui.rendering.errors import AdminError
from adminui.rendering.negotiation import respond, written
from adminui.rendering.paging import page
from adminui.schemas import errors
from inference.mcpauth.connections import McpConnection, connections_before, revoke_connection

router = Router(tags=["mcp connections"])


class ConnectionOut(BaseModel):
    id: int
    user: str
    server: str
    scopes: list[str]  # as granted
    expires_at: datetime | None  # the access token's (null: its server did not say)


class ConnectionPage(BaseModel):
    data: list[ConnectionOut]
    next: str | None


@router.get(
    "/mcp/connections",
    response={200: ConnectionPage, **errors()},
    operation_id="list_mcp_connections",
    url_name="mcp_connections",
    summary="Users' accounts at MCP servers that sign each user in, newest first; filter by "
    "user and server (never the tokens)",
)
def list_connections(
    request: AdminRequest,
    user: str | None = None,
    server: str | None = None,
    cursor: str | None = None,
) -> Any:
    rows, following = page(
        lambda before, limit: connections_before(user, server, before, limit), cursor
    )
    data = {"data": [_described(row) for row in rows], "next": following}
    filters = {"user": user, "server": server}
    return respond(request, data, "adminui/mcp_connections.html", filters=filters)


@router.delete(
    "/mcp/connections/{connection_id}",
    response={200: dict[str, Any], **errors(404)},
    operation_id="revoke_mcp_connection",
    url_name="mcp_connection_revoke",
    summary="Revoke a connection: its tokens are deleted; the user connects again at the next "
    "call that needs it",
)
def revoke(request: AdminRequest, connection_id: int) -> Any:
    if not revoke_connection(connection_id):
        raise AdminError(404, f"MCP connection {connection_id} does not exist", "not_found")
    data = {"id": connection_id, "revoked": True}
    return written(request, reverse("admin:mcp_connections"), data)


@router.post(
    "/mcp/connections/{connection_id}/revoke",
    response={200: dict[str, Any], **errors(404)},
    operation_id="revoke_mcp_connection_by_form",
    url_name="mcp_connection_revoke_form",
    summary="Revoke a connection (the same, for HTML forms)",
)
def revoke_by_form(request: AdminRequest, connection_id: int) -> Any:
    return revoke(request, connection_id)


def _described(row: McpConnection) -> dict[str, Any]:
    return {
        "id": row.id,
        "user": row.user_id,
        "server": row.server,
        "scopes": row.scopes.split(),
        "expires_at": row.expires_at,
    }
