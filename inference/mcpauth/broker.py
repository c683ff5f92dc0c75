"""The process's part in the users' MCP accounts: one HTTP client for the authorization
servers, what was discovered of them, the two halves of a sign-in (the connect link's
redirect to the authorization server, and the callback), and the users' access tokens
for tool calls, refreshed one at a time per user and server.

A sign-in's PKCE verifier and what the callback must know travel sealed in the ``state``
the authorization server hands back (``inference.mcpauth.sealing``): any process of the
gateway sharing the secret key completes it, and nothing of it is readable on the way.
"""

import asyncio
import logging
import time
import weakref
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from urllib.parse import urlencode

import httpx2
from django.utils import timezone
from mcp.client.auth.exceptions import OAuthFlowError
from mcp.client.auth.oauth2 import PKCEParameters
from mcp.client.auth.utils import validate_authorization_response_iss

from agents.schema import Config, McpOAuthConfig
from core.logformat import log_event
from inference.database import in_database
from inference.mcpauth.confinement import Boundary, ConfinedTransport, boundary_of, check
from inference.mcpauth.discovery import AuthServer, discover, fixed
from inference.mcpauth.failures import InvalidLink, SignInRefused
from inference.mcpauth.grants import GrantRefused, exchange_code, refresh
from inference.mcpauth.links import LINK_LIFETIME, Invitation, redirect_uri
from inference.mcpauth.registration import client_for, client_of
from inference.mcpauth.sealing import seal, unseal
from inference.mcpauth.tokens import Grant, forget_grant, grant_of, keep_grant, replace_tokens
from inference.once import first_use

logger = logging.getLogger("gateway.mcp")

DISCOVERY_TTL = 3600.0  # seconds what was discovered of an authorization server is kept


class McpAuth:
    """Owned by the process's MCP hub (``inference.tools.mcp``), which hands it to the
    servers that sign users in; the browser routes borrow it from there."""

    def __init__(self) -> None:
        # Per MCP server: where its sign-ins may fetch, and the client confined to it.
        self._confined: dict[str, tuple[Boundary, httpx2.AsyncClient]] = {}
        self._discovered: dict[str, tuple[float, AuthServer]] = {}
        self._refreshing: weakref.WeakValueDictionary[tuple[str, str], asyncio.Lock] = (
            weakref.WeakValueDictionary()
        )

    async def aclose(self) -> None:
        for _, http in self._confined.values():
            await http.aclose()
        self._confined.clear()

    async def _client(self, url: str) -> tuple[Boundary, httpx2.AsyncClient]:
        """The HTTP client of the sign-ins of the MCP server at ``url`` (``confinement``)."""
        confined = self._confined.get(url)
        if confined is None:
            boundary = await boundary_of(url)
            transport = ConfinedTransport(boundary, httpx2.AsyncHTTPTransport())
            http = httpx2.AsyncClient(transport=transport, timeout=httpx2.Timeout(10, read=30))
            confined = self._confined[url] = (boundary, http)
        return confined

    async def authorization_url(self, config: Config, server: str, invitation: Invitation) -> str:
        """Where the connect link sends the browser: the authorization endpoint, asked for
        a code with PKCE (S256), for the MCP server as the resource and the scopes."""
        url, oauth = _signing_in(config, server)
        auth_server = await self._auth_server(url, oauth)
        boundary, http = await self._client(url)
        endpoint = str(auth_server.metadata.authorization_endpoint)
        await check(boundary, endpoint)  # where the browser is sent: confined alike
        redirect = _redirect(config, server, oauth)
        client = await client_for(http, server, oauth, auth_server, redirect)
        scopes = " ".join(oauth.scopes) or auth_server.scopes
        pkce = PKCEParameters.generate()
        sign_in = {
            "user": invitation.user_id,
            "server": server,
            "issued": invitation.issued,
            "verifier": pkce.code_verifier,
            "issuer": auth_server.issuer,
            "client": client.client_id,
            "scopes": scopes,
        }
        query = {
            "response_type": "code",
            "client_id": client.client_id,
            "redirect_uri": redirect,
            "state": seal("sign-in", sign_in),
            "code_challenge": pkce.code_challenge,
            "code_challenge_method": "S256",
            "resource": auth_server.resource,
        }
        if scopes:
            query["scope"] = scopes
        return f"{endpoint}{'&' if '?' in endpoint else '?'}{urlencode(query)}"

    async def complete(self, config: Config, server: str, answer: Mapping[str, str]) -> str:
        """The callback: the code of the authorization server's ``answer`` exchanged for
        the user's tokens, kept; the user's id."""
        url, oauth = _signing_in(config, server)
        state = answer.get("state", "")
        sign_in = unseal("sign-in", state, max_age=LINK_LIFETIME)
        if sign_in is None or sign_in.get("server") != server:
            raise InvalidLink(
                f"This sign-in is not valid, or took over {LINK_LIFETIME // 60} minutes. Ask "
                "the assistant again for a new link."
            )
        now = timezone.now()
        until = now + timedelta(seconds=LINK_LIFETIME)
        if not await in_database(first_use, "mcp-sign-in", state, until, now):
            raise InvalidLink(
                "This sign-in was completed already: its answer is good once. Ask the "
                "assistant again for a new link."
            )
        if "error" in answer:
            refusal = answer["error"]
            if answer.get("error_description"):
                refusal += f": {answer['error_description']}"
            raise SignInRefused(f"The authorization server refused the sign-in ({refusal}).")
        auth_server = await self._auth_server(url, oauth)
        if auth_server.issuer != sign_in["issuer"]:
            raise InvalidLink(
                "The MCP server's authorization server changed during the sign-in. Ask the "
                "assistant again for a new link."
            )
        try:
            validate_authorization_response_iss(answer.get("iss"), auth_server.metadata)
        except OAuthFlowError as error:  # RFC 9207: the answer is another server's
            raise SignInRefused(f"The sign-in was answered by another server ({error}).") from error
        client = await client_of(server, oauth, sign_in["client"])
        if client is None or not answer.get("code"):
            raise InvalidLink("This sign-in cannot be completed. Ask the assistant for a new link.")
        redirect = _redirect(config, server, oauth)
        _, http = await self._client(url)
        try:
            token = await exchange_code(
                http, auth_server, client, answer["code"], sign_in["verifier"], redirect
            )
        except GrantRefused as refusal:
            raise SignInRefused(
                f"The authorization server refused the code ({refusal})."
            ) from refusal
        user = str(sign_in["user"])
        since = datetime.fromtimestamp(sign_in["issued"], UTC)
        kept = await in_database(
            keep_grant, user, server, auth_server.issuer, client.client_id, token,
            sign_in["scopes"], since, timezone.now(),
        )  # fmt: skip
        if not kept:
            raise InvalidLink("This user's data was erased after the link was given.")
        log_event(logger, "mcp_account_connected", server=server, user=user)
        return user

    async def access_token(self, config: Config, server: str, user_id: str) -> str | None:
        """The user's access token for the server, refreshed first if it has expired (None:
        the user has no usable one)."""
        grant = await in_database(grant_of, user_id, server)
        if grant is None:
            return None
        if not grant.expired(timezone.now()):
            return grant.access_token
        return await self._refresh(config, server, user_id, lambda g: not g.expired(timezone.now()))

    async def refreshed(
        self, config: Config, server: str, user_id: str, refused: str
    ) -> str | None:
        """A new access token in place of ``refused``, which the server answered 401 to."""
        return await self._refresh(config, server, user_id, lambda g: g.access_token != refused)

    async def disconnect(self, server: str, user_id: str, refused: str) -> None:
        """Forget a grant whose fresh token the server refuses too: the user signs in again."""
        grant = await in_database(grant_of, user_id, server)
        if grant is not None and grant.access_token == refused:
            await in_database(forget_grant, grant)

    async def _refresh(
        self, config: Config, server: str, user_id: str, usable: Callable[[Grant], bool]
    ) -> str | None:
        """The refreshed access token (None: the grant is gone or was refused). One refresh
        at a time per user and server: a rotated refresh token is good for one use, so
        a call that waited reads what the first one got (``usable``)."""
        key = (user_id, server)
        lock = self._refreshing.get(key)
        if lock is None:
            lock = self._refreshing[key] = asyncio.Lock()
        async with lock:
            grant = await in_database(grant_of, user_id, server)
            if grant is None or usable(grant):
                return grant.access_token if grant is not None else None
            url, oauth = _signing_in(config, server)
            auth_server = await self._auth_server(url, oauth)
            client = None
            if grant.refresh_token is not None and auth_server.issuer == grant.issuer:
                client = await client_of(server, oauth, grant.client_id)
            if client is None or grant.refresh_token is None:  # nothing to refresh with
                await in_database(forget_grant, grant)
                return None
            _, http = await self._client(url)
            try:
                token = await refresh(http, auth_server, client, grant.refresh_token)
            except GrantRefused as refusal:
                log_event(
                    logger, "mcp_refresh_refused", logging.WARNING,
                    server=server, user=user_id, reason=str(refusal),
                )  # fmt: skip
                await in_database(forget_grant, grant)
                return None
            if not await in_database(replace_tokens, grant, token, timezone.now()):
                return None
            return token.access_token

    async def _auth_server(self, url: str, oauth: McpOAuthConfig) -> AuthServer:
        if oauth.mode == "static":
            return fixed(url, oauth)
        kept = self._discovered.get(url)
        if kept is not None and time.monotonic() - kept[0] < DISCOVERY_TTL:
            return kept[1]
        _, http = await self._client(url)
        found = await discover(http, url)
        self._discovered[url] = (time.monotonic(), found)
        return found


def _redirect(config: Config, server: str, oauth: McpOAuthConfig) -> str:
    """Where the authorization server sends the browser back: ``oauth.redirect_uri`` as
    registered with it (static mode), else the gateway's callback."""
    return oauth.redirect_uri or redirect_uri(config.public_base_url or "", server)


def _signing_in(config: Config, server: str) -> tuple[str, McpOAuthConfig]:
    """The URL and ``oauth`` of a server that signs users in."""
    settings = config.mcp.get(server)
    if settings is None or settings.oauth is None or not settings.url:
        raise InvalidLink(f"There is no MCP server '{server}' that signs users in.")
    return settings.url, settings.oauth
