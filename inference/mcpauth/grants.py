"""The token endpoint (RFC 6749): a sign-in's code exchanged for tokens (with its PKCE
verifier, RFC 7636), and a refresh; each asks for the MCP server as the resource (RFC
8707) and authenticates as the client was registered."""

import base64
from urllib.parse import quote

import httpx2
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import ValidationError

from inference.mcpauth.discovery import AuthServer
from inference.mcpauth.failures import AuthServerUnavailable


class GrantRefused(Exception):
    """The authorization server refused the code or the refresh token (RFC 6749, 5.2)."""


async def exchange_code(
    http: httpx2.AsyncClient,
    auth_server: AuthServer,
    client: OAuthClientInformationFull,
    code: str,
    verifier: str,
    redirect_uri: str,
) -> OAuthToken:
    form = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "code_verifier": verifier,
    }
    return await _token(http, auth_server, client, form)


async def refresh(
    http: httpx2.AsyncClient,
    auth_server: AuthServer,
    client: OAuthClientInformationFull,
    refresh_token: str,
) -> OAuthToken:
    form = {"grant_type": "refresh_token", "refresh_token": refresh_token}
    return await _token(http, auth_server, client, form)


async def _token(
    http: httpx2.AsyncClient,
    auth_server: AuthServer,
    client: OAuthClientInformationFull,
    form: dict[str, str],
) -> OAuthToken:
    form = {**form, "resource": auth_server.resource, "client_id": client.client_id}
    headers = {"Accept": "application/json"}
    secret, method = client.client_secret, client.token_endpoint_auth_method
    if secret and method in (None, "client_secret_basic"):  # RFC 7591's default method
        pair = f"{quote(client.client_id, safe='')}:{quote(secret, safe='')}"
        headers["Authorization"] = f"Basic {base64.b64encode(pair.encode()).decode()}"
    elif secret and method == "client_secret_post":
        form["client_secret"] = secret
    endpoint = str(auth_server.metadata.token_endpoint)
    try:
        response = await http.post(endpoint, data=form, headers=headers)
    except httpx2.HTTPError as error:
        raise AuthServerUnavailable(f"{type(error).__name__}: {error}") from error
    if response.status_code in (400, 401):
        raise GrantRefused(_error_of(response))
    if response.status_code != 200:
        raise AuthServerUnavailable(f"its token endpoint answered HTTP {response.status_code}")
    try:
        return OAuthToken.model_validate_json(response.content)
    except ValidationError as error:
        raise AuthServerUnavailable(
            "its token endpoint answered no usable token (JSON with an access_token of "
            "token_type Bearer)"
        ) from error


def _error_of(response: httpx2.Response) -> str:
    """The OAuth error of a refusal, in one line."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict) and isinstance(body.get("error"), str):
        description = body.get("error_description")
        return f"{body['error']}: {description}" if description else body["error"]
    return f"HTTP {response.status_code}"
