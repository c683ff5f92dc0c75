"""Each user's own account at the MCP servers that sign users in (``mcp.<server>.oauth``,
docs/mcp.md): discovering the authorization server, registering the gateway with it, the
connect link and the browser's round trip, the tokens kept sealed per user and server,
and refreshing them."""
