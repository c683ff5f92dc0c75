"""A real MCP server for the tests, written with the ``mcp`` SDK.

``python greeter.py`` serves over stdio; ``python greeter.py http PORT`` serves
Streamable HTTP on 127.0.0.1:PORT/mcp, ``python greeter.py sse PORT`` the older SSE
transport on 127.0.0.1:PORT/sse. Started as a script (by path), it needs nothing
but the SDK, as an operator's own server would.
"""

import sys

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.exceptions import ToolError

server = MCPServer("greeter")


@server.tool()
def say_hello(name: str) -> str:
    """Greets someone by name."""
    return f"Hello, {name}!"


@server.tool()
def add(a: int, b: int) -> int:
    """Adds two integers."""
    return a + b


@server.tool(name="files.read")
def read_file(path: str) -> str:
    """Reads a (pretend) file: its name has a dot, which some providers refuse."""
    return f"contents of {path}"


@server.tool()
def trace_header(ctx: Context) -> str:
    """Tells the W3C traceparent header of the HTTP request that called it."""
    return (ctx.headers or {}).get("traceparent", "none")


@server.tool()
def explode(reason: str) -> str:
    """Always fails, saying why."""
    raise ToolError(f"exploded: {reason}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["http"]:
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]))
    elif sys.argv[1:2] == ["sse"]:
        server.run(transport="sse", host="127.0.0.1", port=int(sys.argv[2]))
    else:
        print("greeter: ready on stdio", file=sys.stderr)
        server.run()
