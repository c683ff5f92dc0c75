"""MCP servers that sign each user in (``mcp.<server>.oauth``, docs/mcp.md): called with
the user's own access token, never with one of the gateway's.

Such a server has no session of its own: each listing of a user's tools and each of their
calls opens a session with that user's token (``inference.mcpauth`` keeps the tokens and
refreshes them, when they expire or the server refuses one). What a user was listed is
kept for a few minutes. A user without a token (never connected, revoked, or whose
refresh was refused) is offered the tools the agent's ``only`` names, or else one tool to
connect the account, and any of them answers a link that connects it: no browser is at
hand during a tool call, so the model is asked to give the user the link.

With ``oauth.mode: when_asked`` (Coulisse's URL servers written without ``oauth``) a user
without a token is served without one, and asked to connect only when the server answers
401: a server that needs no credentials works for everyone without a sign-in.
"""

import contextlib
import logging
import time
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from agents.schema import Config, McpServerConfig
from inference.mcpauth.failures import AuthServerUnavailable
from inference.mcpauth.links import LINK_LIFETIME, connect_link
from inference.status import McpServerStatus
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

if TYPE_CHECKING:
    import httpx2
    from mcp import Client

    from inference.mcpauth.broker import McpAuth

logger = logging.getLogger("gateway.mcp")

LISTING_TTL = 300.0  # seconds a user's listing is kept
MAX_LISTINGS = 1024  # users whose listing is kept; the least recently used go first
# What a tool is offered with before its server has listed it for the user.
UNLISTED_SCHEMA: dict[str, Any] = {"type": "object", "additionalProperties": True}
NO_ARGUMENTS: dict[str, Any] = {"type": "object", "properties": {}}


class McpUnavailable(Exception):
    """The server, or its authorization server, cannot list a user's tools now."""


class _TokenRefused(Exception):
    """The server answered 401 to the user's access token."""


@dataclass
class _Bearer:
    """The access token of the session the current task opened (None: a session without
    one), and whether the server refused it (401). The session's requests are sent by
    tasks it starts, which inherit it."""

    token: str | None
    refused: bool = False


_ANYONE = "\x00anyone"  # the listing key of what a server lists without a token


_BEARER: ContextVar[_Bearer | None] = ContextVar("mcp_user_bearer", default=None)


class UserMcpServer:
    def __init__(self, name: str, settings: McpServerConfig, auth: "McpAuth") -> None:
        self.name = name
        self.settings = settings
        self.since = datetime.now(UTC)
        self._auth = auth
        self._listings: OrderedDict[str, tuple[float, tuple[McpTool, ...]]] = OrderedDict()
        self._http: httpx2.AsyncClient | None = None

    def status(self) -> McpServerStatus:
        return McpServerStatus(self.name, self.settings.transport, "per-user", (), "", self.since)

    def relist(self) -> None:
        """The config was reloaded: each user's tools are listed again at their next turn."""
        self._listings.clear()

    async def stop(self) -> None:
        if self._http is not None:
            await self._http.aclose()
            self._http = None

    def before_connecting(self, only: list[str] | None) -> tuple[McpTool, ...]:
        """What a user without a token is offered: the tools ``only`` names (their
        descriptions and arguments are the server's to tell, once it lists them), or one
        tool to connect the account."""
        if only:
            description = (
                f"A tool of the MCP server '{self.name}', which works with the user's own "
                "account there (call it to find out whether that account is connected)."
            )
            return tuple(McpTool(name, description, UNLISTED_SCHEMA) for name in only)
        description = (
            f"Connect the user's own account at the MCP server '{self.name}', whose tools "
            "work with it: answers a link the user opens in a browser. The server's tools "
            "are offered once the account is connected."
        )
        return (McpTool(f"connect_{self.name}", description, NO_ARGUMENTS),)

    @property
    def _asks_first(self) -> bool:
        """Whether a user without a token is served without one until the server says no."""
        return self.settings.oauth is not None and self.settings.oauth.mode == "when_asked"

    async def tools_for(self, user_id: str, config: Config) -> tuple[McpTool, ...] | None:
        """The tools the server lists for the user (None: the user has no token);
        ``McpUnavailable`` when they cannot be listed now."""
        try:
            token = await self._auth.access_token(config, self.name, user_id)
            if token is None and self._asks_first:
                return await self._anyones_tools()
            if token is None:
                self._listings.pop(user_id, None)
                return None
            kept = self._listings.get(user_id)
            if kept is not None and time.monotonic() - kept[0] < LISTING_TTL:
                self._listings.move_to_end(user_id)
                return kept[1]
            listed = await self._as_user(
                user_id, config, token, lambda client: list_tools(client, logger, self.name)
            )
        except AuthServerUnavailable as error:
            raise McpUnavailable(
                f"MCP server '{self.name}' cannot sign users in: {error}"
            ) from error
        except Exception as error:
            raise McpUnavailable(
                f"MCP server '{self.name}' is not available: {reason(error)}"
            ) from error
        if listed is not None:
            self._listings[user_id] = (time.monotonic(), listed)
            self._listings.move_to_end(user_id)
            while len(self._listings) > MAX_LISTINGS:
                self._listings.popitem(last=False)
        return listed

    async def call(self, tool: str, arguments: dict[str, Any], user_id: str, config: Config) -> str:
        """The tool's result as text, called with the user's token; the link that connects
        their account when they have none; ``ToolFailed`` with the reason otherwise."""
        try:
            token = await self._auth.access_token(config, self.name, user_id)
            answer = None
            if token is not None:
                answer = await self._as_user(
                    user_id, config, token, lambda client: call_tool(client, tool, arguments)
                )
            elif self._asks_first:
                answer = await self._without_token(
                    lambda client: call_tool(client, tool, arguments)
                )
        except AuthServerUnavailable as error:
            raise ToolFailed(
                f"MCP server '{self.name}' cannot sign the user in now: {error}"
            ) from error
        except ToolFailed:
            raise
        except Exception as error:
            raise ToolFailed(f"MCP server '{self.name}' failed: {reason(error)}") from error
        return answer if answer is not None else self._connect(config, user_id)

    async def _as_user[T](
        self, user_id: str, config: Config, token: str, work: Callable[["Client"], Awaitable[T]]
    ) -> T | None:
        """``work`` done in a session with the user's token, refreshed once if the server
        refuses it (None: the user has no usable token)."""
        for attempt in range(2):
            try:
                async with self._session(token) as client:
                    return await work(client)
            except _TokenRefused:
                if attempt:  # a token just refreshed, refused too: the grant is of no use
                    await self._auth.disconnect(self.name, user_id, token)
                    return None
                refreshed = await self._auth.refreshed(config, self.name, user_id, token)
                if refreshed is None:
                    return None
                token = refreshed
        return None

    async def _anyones_tools(self) -> tuple[McpTool, ...] | None:
        """What the server lists without a token, kept as a user's listing is (None: it
        asks for one)."""
        kept = self._listings.get(_ANYONE)
        if kept is not None and time.monotonic() - kept[0] < LISTING_TTL:
            return kept[1]
        listed = await self._without_token(lambda client: list_tools(client, logger, self.name))
        if listed is not None:
            self._listings[_ANYONE] = (time.monotonic(), listed)
        return listed

    async def _without_token[T](self, work: Callable[["Client"], Awaitable[T]]) -> T | None:
        """``work`` done in a session without a token (None: the server answered 401)."""
        try:
            async with self._session(None) as client:
                return await work(client)
        except _TokenRefused:
            return None

    @contextlib.asynccontextmanager
    async def _session(self, token: str | None) -> "AsyncIterator[Client]":
        from mcp import Client
        from mcp.client.streamable_http import streamable_http_client

        if self._http is None:
            self._http = http_client(on_request=(_bear,), on_response=(_note_refusal,))
        bearer = _Bearer(token)
        entered = _BEARER.set(bearer)
        try:
            url = self.settings.url or ""
            transport = (
                sse_transport(url, (_bear,), (_note_refusal,))
                if self.settings.transport == "sse"
                else streamable_http_client(url, http_client=self._http)
            )
            async with Client(transport, read_timeout_seconds=CALL_TIMEOUT) as client:
                yield client
        except Exception as error:
            if bearer.refused:
                raise _TokenRefused from error
            raise
        finally:
            _BEARER.reset(entered)

    def _connect(self, config: Config, user_id: str) -> str:
        link = connect_link(config.public_base_url or "", self.name, user_id)
        return (
            f"The user has not connected their account at '{self.name}' (or must connect it "
            "again), so its tools cannot work for them yet. Give the user this link to open "
            f"in their browser (it is valid for {LINK_LIFETIME // 60} minutes), and try again "
            f"once they say they are done: {link}"
        )


async def _bear(request: "httpx2.Request") -> None:
    bearer = _BEARER.get()
    if bearer is not None and bearer.token is not None:
        request.headers["Authorization"] = f"Bearer {bearer.token}"


async def _note_refusal(response: "httpx2.Response") -> None:
    bearer = _BEARER.get()
    if bearer is not None and response.status_code == 401:
        bearer.refused = True
