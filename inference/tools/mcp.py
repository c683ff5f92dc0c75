"""MCP servers the agents borrow tools from (the config's ``mcp`` section).

Each server has one owner task: it opens the session (a stdio child process, or a
Streamable-HTTP endpoint), lists the tools, keeps the session open and lists the tools
again on every config reload. When the server cannot be reached or the session breaks,
the owner records why and tries again with a growing delay (0.5 s up to 30 s), or at
once when the config is reloaded; until then the server is unavailable and requests that
need it answer 502. Request code only
borrows the open session to call a tool.

A server that signs each user in (``oauth``) has no session of its own: each of its users'
listings and calls opens one with that user's token (``inference.tools.mcp_users``).
"""

import asyncio
import contextlib
import logging
import os
import threading
import time
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agents.schema import McpServerConfig
from core.logformat import log_event
from inference.status import McpServerStatus, McpState
from inference.tools.failure import ToolFailed
from inference.tools.mcp_session import (
    CALL_TIMEOUT,
    McpTool,
    call_tool,
    http_client,
    list_tools,
    reason,
    sse_transport,
)
from inference.tools.mcp_users import UserMcpServer

if TYPE_CHECKING:
    from mcp import Client

    from inference.mcpauth.broker import McpAuth

logger = logging.getLogger("gateway.mcp")

FIRST_RETRY = 0.5
LAST_RETRY = 30.0
RELOAD_RETRY_GAP = 5.0  # a reload retries a waiting server at once if it last tried this long ago


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
        why = f": {self.last_error}" if self.last_error else " (still connecting)"
        return f"MCP server '{self.name}' is not available{why}"

    async def call(self, tool: str, arguments: dict[str, Any]) -> str:
        """The tool's result as text; ``ToolFailed`` with the reason otherwise."""
        client = self._client
        if client is None:
            raise ToolFailed(self.unavailable())
        try:
            return await call_tool(client, tool, arguments)
        except ToolFailed:
            raise
        except Exception as error:
            self._broken = True
            self._wake.set()
            raise ToolFailed(f"MCP server '{self.name}' failed: {reason(error)}") from error

    async def _own(self) -> None:
        delay = FIRST_RETRY
        while True:
            self._last_attempt = time.monotonic()
            try:
                async with self._session() as client:
                    self.tools = await list_tools(client, logger, self.name)
                    self._set_state("connected", "")
                    self._first_attempt.set()
                    delay = FIRST_RETRY
                    self._client = client
                    while True:
                        await self._wake.wait()
                        self._wake.clear()
                        if self._broken:
                            raise ConnectionError("a tool call found the session broken")
                        self.tools = await list_tools(client, logger, self.name)
            except asyncio.CancelledError:
                self._client = None
                raise
            except Exception as error:
                self._client = None
                self._broken = False
                self._set_state("unavailable", reason(error))
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
        if settings.transport == "sse":
            async with Client(
                sse_transport(settings.url or ""), read_timeout_seconds=CALL_TIMEOUT
            ) as client:
                yield client
            return
        if settings.transport == "http":
            from mcp.client.streamable_http import streamable_http_client

            async with http_client() as http:
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
        self._signing_in: dict[str, UserMcpServer] = {}
        self._auth: McpAuth | None = None

    def server(self, name: str) -> McpServer | None:
        """The server of that name with a session of its own."""
        return self._servers.get(name)

    def user_server(self, name: str) -> UserMcpServer | None:
        """The server of that name that signs each user in."""
        return self._signing_in.get(name)

    @property
    def auth(self) -> "McpAuth":
        """The users' accounts at the servers that sign them in, made with the first use
        (its libraries are loaded only where such a server is configured)."""
        if self._auth is None:
            from inference.mcpauth.broker import McpAuth

            self._auth = McpAuth()
        return self._auth

    def status(self) -> list[McpServerStatus]:
        shared = [server.status() for server in self._servers.values()]
        return shared + [server.status() for server in self._signing_in.values()]

    async def apply(self, configured: dict[str, McpServerConfig]) -> None:
        """Start new servers, restart changed ones, stop removed ones, relist the rest."""
        shared = {name: s for name, s in configured.items() if s.oauth is None}
        signing_in = {name: s for name, s in configured.items() if s.oauth is not None}
        for name, server in list(self._servers.items()):
            if shared.get(name) != server.settings:
                del self._servers[name]
                await server.stop()
        for name, user_server in list(self._signing_in.items()):
            if signing_in.get(name) != user_server.settings:
                del self._signing_in[name]
                await user_server.stop()
        for name, settings in shared.items():
            if name in self._servers:
                self._servers[name].relist()
            else:
                self._servers[name] = McpServer(name, settings)
                self._servers[name].start()
        for name, settings in signing_in.items():
            if name in self._signing_in:
                self._signing_in[name].relist()
            else:
                self._signing_in[name] = UserMcpServer(name, settings, self.auth)

    async def stop(self) -> None:
        servers, self._servers = list(self._servers.values()), {}
        for server in servers:
            await server.stop()
        signing_in, self._signing_in = list(self._signing_in.values()), {}
        for user_server in signing_in:
            await user_server.stop()
        if self._auth is not None:
            await self._auth.aclose()


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
