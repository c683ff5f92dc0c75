"""MCP servers the agents borrow tools from (the config's ``mcp`` section).

Each server has one owner task: it opens the session (a stdio child process, or a
Streamable-HTTP endpoint), lists the tools, keeps the session open and lists the tools
again on every config reload. When the server cannot be reached or the session breaks,
the owner records why and tries again with a growing delay (0.5 s up to 30 s), or at
once when the config is reloaded; until then the server is unavailable and requests that
need it answer 502. Request code only
borrows the open session to call a tool.
"""

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agents.schema import McpServerConfig
from core.logformat import log_event
from core.traceparent import outgoing_headers
from inference.status import McpServerStatus, McpState
from inference.tools.failure import ToolFailed

if TYPE_CHECKING:
    import httpx2

    # The SDK is imported when a server is first opened: it takes 25 MB of memory that a
    # gateway without MCP servers does not need.
    from mcp import Client

logger = logging.getLogger("gateway.mcp")

CALL_TIMEOUT = 60.0  # seconds a tool call may take
FIRST_RETRY = 0.5
LAST_RETRY = 30.0
RELOAD_RETRY_GAP = 5.0  # a reload retries a waiting server at once if it last tried this long ago


@dataclass(frozen=True)
class McpTool:
    name: str
    description: str
    input_schema: dict[str, Any]


class McpServer:
    def __init__(self, name: str, settings: McpServerConfig) -> None:
        self.name = name
        self.settings = settings
        self.state: McpState = "connecting"
        self.tools: tuple[McpTool, ...] = ()
        self.last_error = ""
        self.since = datetime.now(UTC)
        self._client: Client | None = None
        self._wake = asyncio.Event()
        self._first_attempt = asyncio.Event()
        self._broken = False
        self._last_attempt = float("-inf")
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._own(), name=f"mcp server {self.name}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task

    def relist(self) -> None:
        """List the tools again (the config was reloaded); a server waiting to retry
        retries now, unless it tried moments ago (a burst of admin writes must not start
        a stdio server's command once per write)."""
        waiting = self.state == "unavailable"
        if not waiting or time.monotonic() - self._last_attempt >= RELOAD_RETRY_GAP:
            self._wake.set()

    def status(self) -> McpServerStatus:
        return McpServerStatus(
            name=self.name,
            transport=self.settings.transport,
            state=self.state,
            tools=tuple(tool.name for tool in self.tools),
            last_error=self.last_error,
            since=self.since,
        )

    async def settled(self, timeout: float) -> None:
        """Wait (at most ``timeout`` seconds) for the first connection attempt to end."""
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._first_attempt.wait(), timeout)

    def unavailable(self) -> str:
        """Why requests that need this server cannot be served now."""
        reason = f": {self.last_error}" if self.last_error else " (still connecting)"
        return f"MCP server '{self.name}' is not available{reason}"

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """The tool's result as text; ``ToolFailed`` with the reason otherwise."""
        client = self._client
        if client is None:
            raise ToolFailed(self.unavailable())
        from mcp.shared.exceptions import MCPError

        try:
            result = await client.call_tool(tool, arguments, read_timeout_seconds=CALL_TIMEOUT)
        except MCPError as error:
            raise ToolFailed(f"the MCP server refused the call: {error}") from error
        except Exception as error:
            self._broken = True
            self._wake.set()
            raise ToolFailed(f"MCP server '{self.name}' failed: {_reason(error)}") from error
        text = _result_text(result.content, result.structured_content)
        if result.is_error:
            raise ToolFailed(text or "the tool reported an error")
        return text

    async def _own(self) -> None:
        delay = FIRST_RETRY
        while True:
            self._last_attempt = time.monotonic()
            try:
                async with self._session() as client:
                    await self._list_tools(client)
                    self._set_state("connected", "")
                    self._first_attempt.set()
                    delay = FIRST_RETRY
                    self._client = client
                    while True:
                        await self._wake.wait()
                        self._wake.clear()
                        if self._broken:
                            raise ConnectionError("a tool call found the session broken")
                        await self._list_tools(client)
            except asyncio.CancelledError:
                self._client = None
                raise
            except Exception as error:
                self._client = None
                self._broken = False
                self._set_state("unavailable", _reason(error))
                self._first_attempt.set()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), delay)  # a reload retries at once
            self._wake.clear()
            delay = min(delay * 2, LAST_RETRY)

    @contextlib.asynccontextmanager
    async def _session(self) -> "AsyncIterator[Client]":
        from mcp import Client
        from mcp.client.stdio import StdioServerParameters, stdio_client

        settings = self.settings
        if settings.transport == "http":
            import httpx2
            from mcp.client.streamable_http import streamable_http_client

            # Each tool call's POST carries the traceparent of its execute_tool span: the
            # SDK sends it with the calling task's context variables. (The timeouts are
            # the SDK's own defaults: a server may hold a response stream open.)
            http = httpx2.AsyncClient(
                timeout=httpx2.Timeout(30, read=300),
                event_hooks={"request": [_with_traceparent]},
            )
            async with http:
                transport = streamable_http_client(settings.url or "", http_client=http)
                async with Client(transport, read_timeout_seconds=CALL_TIMEOUT) as client:
                    yield client
            return
        parameters = StdioServerParameters(
            command=settings.command or "", args=list(settings.args), env=dict(settings.env) or None
        )
        with _StderrLines(self.name) as errlog:
            transport = stdio_client(parameters, errlog=errlog)
            async with Client(transport, read_timeout_seconds=CALL_TIMEOUT) as client:
                yield client

    async def _list_tools(self, client: "Client") -> None:
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
        self.tools = tuple(tools)
        log_event(logger, "mcp_tools_listed", server=self.name, tools=[t.name for t in tools])

    def _set_state(self, state: McpState, error: str) -> None:
        if (state, error) != (self.state, self.last_error):
            self.since = datetime.now(UTC)
            level = logging.INFO if state == "connected" else logging.WARNING
            log_event(logger, "mcp_server_state", level, server=self.name, state=state, error=error)
        self.state, self.last_error = state, error


class McpHub:
    """Every configured MCP server, kept in step with the config."""

    def __init__(self) -> None:
        self._servers: dict[str, McpServer] = {}

    def server(self, name: str) -> McpServer | None:
        return self._servers.get(name)

    def status(self) -> list[McpServerStatus]:
        return [server.status() for server in self._servers.values()]

    async def apply(self, configured: dict[str, McpServerConfig]) -> None:
        """Start new servers, restart changed ones, stop removed ones, relist the rest."""
        for name, server in list(self._servers.items()):
            if configured.get(name) != server.settings:
                del self._servers[name]
                await server.stop()
        for name, settings in configured.items():
            if name in self._servers:
                self._servers[name].relist()
            else:
                self._servers[name] = McpServer(name, settings)
                self._servers[name].start()

    async def stop(self) -> None:
        servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            await server.stop()


class _StderrLines:
    """A pipe for a stdio server's stderr whose lines are logged as JSON events (every
    line the gateway writes is one JSON object)."""

    def __init__(self, server: str) -> None:
        self.server = server

    def __enter__(self) -> Any:
        read, write = os.pipe()
        self._writer = os.fdopen(write, "w")
        self._thread = threading.Thread(
            target=self._log_lines, args=(os.fdopen(read, "r", errors="replace"),), daemon=True
        )
        self._thread.start()
        return self._writer

    def __exit__(self, *exc: object) -> None:
        self._writer.close()  # the reader sees the end once the child has gone too

    def _log_lines(self, reader: Any) -> None:
        with reader:
            for line in reader:
                log_event(logger, "mcp_server_stderr", server=self.server, line=line.rstrip())


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


def _reason(error: BaseException) -> str:
    """The innermost cause of a failure, in one line (task groups wrap them in groups)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error).strip().splitlines()[0] if str(error).strip() else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
