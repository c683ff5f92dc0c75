"""The gateway as an MCP server: ``/mcp`` (docs/mcp.md)."""
