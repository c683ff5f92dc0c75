"""Finding an MCP server's authorization server, as the MCP specification has clients do:
the server's ``401`` names its protected resource metadata (RFC 9728, in
``WWW-Authenticate: Bearer resource_metadata=...``), which names the authorization server,
whose metadata (RFC 8414) names its endpoints; the well-known URLs stand in for what is
not named. The SDK's client helpers (``mcp.client.auth.utils``) build the URLs and read
the answers."""

from dataclasses import dataclass
from urllib.parse import urlsplit

import httpx2
from mcp.client.auth.utils import (
    build_oauth_authorization_server_metadata_discovery_urls,
    build_protected_resource_metadata_discovery_urls,
    create_oauth_metadata_request,
    extract_resource_metadata_from_www_auth,
    extract_scope_from_www_auth,
    get_client_metadata_scopes,
    handle_auth_metadata_response,
    handle_protected_resource_response,
    issuers_match,
)
from mcp.shared.auth import OAuthMetadata, ProtectedResourceMetadata
from mcp.shared.auth_utils import check_resource_allowed, resource_url_from_server_url
from mcp_types import LATEST_PROTOCOL_VERSION

from agents.schema import McpOAuthConfig
from inference.mcpauth.failures import AuthServerUnavailable

GRANT_TYPES = ["authorization_code", "refresh_token"]
# The request the probe sends: what a client's session starts with.
_INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {
        "protocolVersion": LATEST_PROTOCOL_VERSION,
        "capabilities": {},
        "clientInfo": {"name": "agent-gateway", "version": "1"},
    },
}


@dataclass(frozen=True)
class AuthServer:
    """An MCP server's authorization server, as discovered."""

    issuer: str
    metadata: OAuthMetadata
    resource: str  # the MCP server as the tokens' audience (RFC 8707)
    scopes: str | None  # what the MCP server asks for, space-separated (None: unsaid)


def fixed(url: str, oauth: McpOAuthConfig) -> AuthServer:
    """The authorization server ``oauth.mode: static`` names: its endpoints as written,
    nothing discovered (its issuer is the token endpoint's origin)."""
    token_url = oauth.token_url or ""
    parts = urlsplit(token_url)
    metadata = OAuthMetadata.model_validate(
        {
            "issuer": f"{parts.scheme}://{parts.netloc}",
            "authorization_endpoint": oauth.authorization_url,
            "token_endpoint": token_url,
        }
    )
    return AuthServer(str(metadata.issuer), metadata, resource_url_from_server_url(url), None)


async def discover(http: httpx2.AsyncClient, url: str) -> AuthServer:
    """The authorization server of the MCP server at ``url``."""
    try:
        named, challenged_scope = await _challenge(http, url)
        resource_metadata = await _protected_resource(http, url, named)
        resource = resource_url_from_server_url(url)
        issuer = None
        if resource_metadata is not None:
            advertised = str(resource_metadata.resource)
            if not check_resource_allowed(resource, advertised):
                raise AuthServerUnavailable(
                    f"the MCP server's metadata is for another resource ({advertised})"
                )
            resource, issuer = advertised, str(resource_metadata.authorization_servers[0])
        metadata = await _authorization_server(http, url, issuer)
    except httpx2.HTTPError as error:
        raise AuthServerUnavailable(f"{type(error).__name__}: {error}") from error
    scopes = get_client_metadata_scopes(challenged_scope, resource_metadata, metadata, GRANT_TYPES)
    return AuthServer(str(metadata.issuer), metadata, resource, scopes)


async def _challenge(http: httpx2.AsyncClient, url: str) -> tuple[str | None, str | None]:
    """What the MCP server's ``401`` to a request without a token names: its resource
    metadata's URL and the scopes it wants (Nones: it did not answer 401)."""
    headers = {"Accept": "application/json, text/event-stream"}
    async with http.stream("POST", url, json=_INITIALIZE, headers=headers) as response:
        if response.status_code != 401:
            return None, None
        named = extract_resource_metadata_from_www_auth(response)
        return named, extract_scope_from_www_auth(response)


async def _protected_resource(
    http: httpx2.AsyncClient, url: str, named: str | None
) -> ProtectedResourceMetadata | None:
    """The MCP server's protected resource metadata, from the URL its 401 named, then the
    well-known ones (None: it publishes none, the 2025-03-26 specification's servers)."""
    failed = None
    for candidate in build_protected_resource_metadata_discovery_urls(named, url):
        response = await http.send(create_oauth_metadata_request(candidate))
        if response.status_code >= 500 or response.status_code == 429:
            failed = response.status_code
        if (found := await handle_protected_resource_response(response)) is not None:
            return found
    if failed is not None:  # says nothing of whether the server publishes metadata
        raise AuthServerUnavailable(f"its protected resource metadata answered HTTP {failed}")
    return None


async def _authorization_server(
    http: httpx2.AsyncClient, url: str, issuer: str | None
) -> OAuthMetadata:
    """The metadata of ``issuer`` (None: the MCP server's origin is its own authorization
    server), which must name that issuer (RFC 8414, 3.3)."""
    candidates = build_oauth_authorization_server_metadata_discovery_urls(issuer, url)
    origin = urlsplit(url)
    expected = issuer or f"{origin.scheme}://{origin.netloc}"
    for candidate in candidates:
        response = await http.send(create_oauth_metadata_request(candidate))
        answered, metadata = await handle_auth_metadata_response(response)
        if not answered:
            raise AuthServerUnavailable(f"{candidate} answered HTTP {response.status_code}")
        if metadata is not None:
            if not issuers_match(str(metadata.issuer), expected):
                raise AuthServerUnavailable(
                    f"the metadata at {candidate} names the issuer {metadata.issuer}, not {expected}"
                )
            return metadata
    raise AuthServerUnavailable(f"no authorization server metadata at {', '.join(candidates)}")
