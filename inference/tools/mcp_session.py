"""What every MCP session of the gateway shares, whoever it runs for: the tools a server
lists, the HTTP client of Streamable-HTTP sessions, a tool call's result as text, and a
failure in one line."""

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from core.logformat import log_event
from core.traceparent import outgoing_headers
from inference.tools.failure import ToolFailed

if TYPE_CHECKING:
    import logging
    from collections.abc import Awaitable, Callable, Sequence

    import httpx2

    # The SDK is imported when a session is first opened: it takes 25 MB of memory that a
    # gateway without MCP servers does not need.
    from mcp import Client

CALL_TIMEOUT = 60.0  # seconds a tool call may take


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str
    input_schema: dict[str, Any]


def http_client(
    on_request: "Sequence[Callable[[httpx2.Request], Awaitable[None]]]" = (),
    on_response: "Sequence[Callable[[httpx2.Response], Awaitable[None]]]" = (),
) -> "httpx2.AsyncClient":
    """A client for Streamable-HTTP sessions, with more hooks on each request and response.
    Each tool call's POST carries the traceparent of its execute_tool span: the SDK sends
    it with the calling task's context variables. (The timeouts are the SDK's own
    defaults: a server may hold a response stream open.)"""
    import httpx2

    return httpx2.AsyncClient(
        timeout=httpx2.Timeout(30, read=300),
        event_hooks={"request": [_with_traceparent, *on_request], "response": [*on_response]},
    )


def sse_transport(
    url: str,
    on_request: "Sequence[Callable[[httpx2.Request], Awaitable[None]]]" = (),
    on_response: "Sequence[Callable[[httpx2.Response], Awaitable[None]]]" = (),
) -> Any:
    """A session over SSE (MCP's older HTTP transport), its client made like
    ``http_client``'s: the same hooks on each request and response."""
    from mcp.client.sse import sse_client

    def made(
        headers: dict[str, str] | None = None,
        timeout: "httpx2.Timeout | None" = None,
        auth: "httpx2.Auth | None" = None,
    ) -> "httpx2.AsyncClient":
        client = http_client(on_request, on_response)
        client.headers.update(headers or {})
        if auth is not None:
            client.auth = auth
        return client

    return sse_client(url, httpx_client_factory=made)


async def list_tools(
    client: "Client", logger: "logging.Logger", server: str
) -> tuple[McpTool, ...]:
    tools: list[McpTool] = []
    cursor = None
    while True:
        listed = await client.list_tools(cursor=cursor, cache_mode="refresh")
        tools += [
            McpTool(tool.name, tool.description or "", dict(tool.input_schema))
            for tool in listed.tools
        ]
        cursor = listed.next_cursor
        if not cursor:
            break
    log_event(logger, "mcp_tools_listed", server=server, tools=[t.name for t in tools])
    return tuple(tools)


async def call_tool(client: "Client", tool: str, arguments: dict[str, Any]) -> str:
    """The tool's result as text; ``ToolFailed`` with the reason when the server refused
    the call or the tool reported an error (any other failure is raised as it is)."""
    from mcp.shared.exceptions import MCPError

    try:
        result = await client.call_tool(tool, arguments, read_timeout_seconds=CALL_TIMEOUT)
    except MCPError as error:
        raise ToolFailed(f"the MCP server refused the call: {error}") from error
    text = _result_text(result.content, result.structured_content)
    if result.is_error:
        raise ToolFailed(text or "the tool reported an error")
    return text


def reason(error: BaseException) -> str:
    """The innermost cause of a failure, in one line (task groups wrap them in groups)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


async def _with_traceparent(request: "httpx2.Request") -> None:
    request.headers.update(outgoing_headers())


def _result_text(content: list[Any], structured: Any) -> str:
    parts = []
    for block in content:
        text = getattr(block, "text", None)
        parts.append(text if isinstance(text, str) else f"[{getattr(block, 'type', 'content')}]")
    if not parts and structured is not None:
        return str(structured)
    return "\n".join(parts)
