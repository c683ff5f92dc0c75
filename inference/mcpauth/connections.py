"""The users' MCP connections as the admin lists and revokes them (never their tokens)."""

from inference.models import McpConnection as McpConnection  # the row, for the admin


def connections_before(
    user_id: str | None, server: str | None, before: int | None, limit: int
) -> list[McpConnection]:
    """A page of connections, newest first (``before``: an id, for the next page)."""
    rows = McpConnection.objects.defer("tokens").order_by("-id")
    if user_id:
        rows = rows.filter(user_id=user_id)
    if server:
        rows = rows.filter(server=server)
    if before is not None:
        rows = rows.filter(id__lt=before)
    return list(rows[:limit])


def revoke_connection(connection_id: int) -> bool:
    """Delete the connection: its user signs in again at the next call that needs it."""
    deleted, _ = McpConnection.objects.filter(id=connection_id).delete()
    return bool(deleted)
