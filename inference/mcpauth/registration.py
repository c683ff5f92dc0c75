"""The gateway as a client of an authorization server: the client of ``oauth.client_id``
(registered by hand; a public client), or one registered dynamically (RFC 7591) for an MCP
server's redirect URI, kept sealed (it may hold a client secret) and used again."""

import time

import httpx2
from mcp.client.auth.exceptions import OAuthRegistrationError
from mcp.client.auth.oauth2 import check_registration_usable
from mcp.client.auth.utils import create_client_registration_request, handle_registration_response
from mcp.shared.auth import (
    OAuthClientInformationFull,
    OAuthClientMetadata,
    TokenEndpointAuthMethod,
)
from pydantic import AnyUrl

from agents.schema import McpOAuthConfig
from inference.database import in_database
from inference.mcpauth.discovery import GRANT_TYPES, AuthServer
from inference.mcpauth.failures import AuthServerUnavailable, SignInRefused
from inference.mcpauth.sealing import seal, unseal
from inference.models import McpClient

CLIENT_NAME = "Agent gateway"
# How the gateway would rather authenticate at the token endpoint, best first: it keeps
# a secret server-side, so a confidential client (RFC 6749, 2.3.1) where it may be one.
_AUTH_METHODS: tuple[TokenEndpointAuthMethod, ...] = (
    "client_secret_basic",
    "client_secret_post",
    "none",
)


async def client_for(
    http: httpx2.AsyncClient,
    server: str,
    oauth: McpOAuthConfig,
    auth_server: AuthServer,
    redirect_uri: str,
) -> OAuthClientInformationFull:
    """The client a sign-in at ``auth_server`` is for: registered now if need be."""
    if oauth.client_id:
        return _by_hand(oauth)
    kept = await in_database(_registered, server, auth_server.issuer, redirect_uri)
    if kept is not None:
        return kept
    client = await _register(http, server, auth_server, redirect_uri)
    await in_database(_keep, server, auth_server.issuer, redirect_uri, client)
    return client


async def client_of(
    server: str, oauth: McpOAuthConfig, client_id: str
) -> OAuthClientInformationFull | None:
    """The client a user's tokens were granted to (a refresh authenticates as it); None
    when the gateway no longer has it."""
    if client_id == oauth.client_id:
        return _by_hand(oauth)
    return await in_database(_by_id, server, client_id)


def _by_hand(oauth: McpOAuthConfig) -> OAuthClientInformationFull:
    """The client ``oauth`` names: public, or confidential with its ``client_secret``
    (sent in the token request's form)."""
    secret = oauth.client_secret or None
    return OAuthClientInformationFull(
        client_id=oauth.client_id or "",
        client_secret=secret,
        token_endpoint_auth_method="client_secret_post" if secret else "none",
    )


async def _register(
    http: httpx2.AsyncClient, server: str, auth_server: AuthServer, redirect_uri: str
) -> OAuthClientInformationFull:
    supported = auth_server.metadata.token_endpoint_auth_methods_supported
    methods = [m for m in _AUTH_METHODS if supported is None or m in supported]
    if not methods:
        raise SignInRefused(
            f"The authorization server of '{server}' takes no client authentication the "
            f"gateway has ({', '.join(_AUTH_METHODS)}): register a client by hand and set "
            f"mcp.{server}.oauth.client_id."
        )
    metadata = OAuthClientMetadata(
        redirect_uris=[AnyUrl(redirect_uri)],
        token_endpoint_auth_method=methods[0],
        grant_types=list(GRANT_TYPES),
        response_types=["code"],
        scope=auth_server.scopes,
        client_name=CLIENT_NAME,
        application_type="web",
    )
    request = create_client_registration_request(auth_server.metadata, metadata, auth_server.issuer)
    try:
        response = await http.send(request)
        client = await handle_registration_response(response)
        check_registration_usable(client)
    except httpx2.HTTPError as error:
        raise AuthServerUnavailable(f"{type(error).__name__}: {error}") from error
    except OAuthRegistrationError as error:
        raise SignInRefused(
            f"The authorization server of '{server}' did not register the gateway ({error}): "
            f"register a client by hand and set mcp.{server}.oauth.client_id."
        ) from error
    return client


def _registered(server: str, issuer: str, redirect_uri: str) -> OAuthClientInformationFull | None:
    """The latest registration for the redirect URI whose secret has not expired."""
    rows = McpClient.objects.filter(server=server, issuer=issuer, redirect_uri=redirect_uri)
    for row in rows.order_by("-id"):
        client = _opened(row)
        expires = client.client_secret_expires_at if client is not None else None
        if client is not None and (not expires or expires > time.time()):
            return client
    return None


def _by_id(server: str, client_id: str) -> OAuthClientInformationFull | None:
    row = McpClient.objects.filter(server=server, client_id=client_id).order_by("-id").first()
    return _opened(row) if row is not None else None


def _opened(row: McpClient) -> OAuthClientInformationFull | None:
    """A kept registration (None: sealed under another secret key)."""
    value = unseal("registration", row.registration)
    return OAuthClientInformationFull.model_validate(value) if value is not None else None


def _keep(server: str, issuer: str, redirect_uri: str, client: OAuthClientInformationFull) -> None:
    McpClient.objects.create(
        server=server,
        issuer=issuer,
        redirect_uri=redirect_uri,
        client_id=client.client_id,
        registration=seal("registration", client.model_dump(mode="json", exclude_none=True)),
    )
