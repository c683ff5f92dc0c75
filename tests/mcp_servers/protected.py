"""An OAuth authorization server and an MCP server it protects, for the tests of users' own
MCP accounts (tests/e2e/test_mcp_oauth.py). Both serve on loopback from threads of the
test process (uvicorn), so the MCP server checks bearer tokens against the authorization
server's memory.

The authorization server speaks what the gateway needs: its metadata (RFC 8414), dynamic
client registration (RFC 7591), an authorization endpoint that signs in at once the user
the test names (``sign_in``; the "browser" is an HTTP client following redirects) and
sends the browser back with a code, and a token endpoint for ``authorization_code`` (the
PKCE verifier, redirect URI, client and resource checked) and ``refresh_token`` (rotated).
The test can revoke tokens, shorten their lifetime or have sign-ins denied.

The MCP server (the SDK's ``MCPServer`` with a token verifier) answers a request without a
valid token 401 with ``WWW-Authenticate: Bearer resource_metadata=...``, serves its
protected resource metadata (RFC 9728), and has one tool, ``whoami``, that says whose
account the token that called it is of.
"""

import base64
import hashlib
import secrets
import threading
import time
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import unquote, urlencode

import uvicorn
from mcp.server import MCPServer
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.settings import AuthSettings
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from tests.server import free_port

SCOPE = "notes.read"


@dataclass
class Client:
    client_id: str
    secret: str | None
    redirect_uris: list[str]
    method: str  # token_endpoint_auth_method


@dataclass
class Code:
    user: str
    client_id: str
    redirect_uri: str
    challenge: str
    resource: str
    scope: str


@dataclass
class Issued:
    user: str
    client_id: str
    scope: str
    resource: str
    expires_at: float
    revoked: bool = False


@dataclass
class AuthorizationServer:
    port: int = field(default_factory=free_port)
    signed_in: str | None = None  # who signs in at the next authorization request
    deny: bool = False  # the next sign-ins are refused (access_denied)
    lifetime: int = 3600  # expires_in of the access tokens issued from now on
    clients: dict[str, Client] = field(default_factory=dict)
    codes: dict[str, Code] = field(default_factory=dict)
    access: dict[str, Issued] = field(default_factory=dict)
    refresh: dict[str, Issued] = field(default_factory=dict)
    authorizations: list[dict[str, str]] = field(default_factory=list)  # their query
    grants: list[tuple[str, str]] = field(default_factory=list)  # (grant_type, user)
    registrations: int = 0
    rejected: list[str] = field(default_factory=list)  # access tokens the MCP server refused

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def preregister(self, client_id: str, redirect_uri: str, secret: str | None = None) -> None:
        """A client registered by hand (``oauth.client_id``): public, or confidential
        with ``secret`` (sent in the token request's form)."""
        method = "client_secret_post" if secret else "none"
        self.clients[client_id] = Client(client_id, secret, [redirect_uri], method)

    def revoke_access(self, user: str) -> None:
        for issued in self.access.values():
            if issued.user == user:
                issued.revoked = True

    def revoke_everything(self, user: str) -> None:
        self.revoke_access(user)
        for issued in self.refresh.values():
            if issued.user == user:
                issued.revoked = True

    def grants_of(self, user: str) -> list[str]:
        return [grant for grant, whom in self.grants if whom == user]

    def secrets(self) -> list[str]:
        """Every token and client secret it ever issued."""
        found = [*self.access, *self.refresh]
        return found + [c.secret for c in self.clients.values() if c.secret is not None]

    def verify(self, token: str) -> AccessToken | None:
        issued = self.access.get(token)
        if issued is None or issued.revoked or issued.expires_at < time.time():
            self.rejected.append(token)
            return None
        return AccessToken(
            token=token,
            client_id=issued.client_id,
            scopes=issued.scope.split(),
            expires_at=int(issued.expires_at),
            resource=issued.resource,
            subject=issued.user,
        )

    def app(self) -> Starlette:
        return Starlette(
            routes=[
                Route("/.well-known/oauth-authorization-server", self._metadata),
                Route("/register", self._register, methods=["POST"]),
                Route("/authorize", self._authorize),
                Route("/token", self._token, methods=["POST"]),
            ]
        )

    async def _metadata(self, request: Request) -> Response:
        return JSONResponse(
            {
                "issuer": self.url,
                "authorization_endpoint": f"{self.url}/authorize",
                "token_endpoint": f"{self.url}/token",
                "registration_endpoint": f"{self.url}/register",
                "scopes_supported": [SCOPE],
                "response_types_supported": ["code"],
                "grant_types_supported": ["authorization_code", "refresh_token"],
                "code_challenge_methods_supported": ["S256"],
                "token_endpoint_auth_methods_supported": [
                    "client_secret_basic",
                    "client_secret_post",
                    "none",
                ],
                "authorization_response_iss_parameter_supported": True,
            }
        )

    async def _register(self, request: Request) -> Response:
        asked = await request.json()
        method = asked.get("token_endpoint_auth_method", "client_secret_basic")
        client = Client(
            f"client-{secrets.token_hex(6)}",
            None if method == "none" else f"secret-{secrets.token_urlsafe(16)}",
            list(asked["redirect_uris"]),
            method,
        )
        self.clients[client.client_id] = client
        self.registrations += 1
        answer = {**asked, "client_id": client.client_id, "client_id_issued_at": int(time.time())}
        if client.secret is not None:
            answer |= {"client_secret": client.secret, "client_secret_expires_at": 0}
        return JSONResponse(answer, status_code=201)

    async def _authorize(self, request: Request) -> Response:
        query = dict(request.query_params)
        self.authorizations.append(query)
        client = self.clients.get(query.get("client_id", ""))
        redirect_uri = query.get("redirect_uri", "")
        if client is None or redirect_uri not in client.redirect_uris:
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        if query.get("response_type") != "code" or query.get("code_challenge_method") != "S256":
            return JSONResponse({"error": "invalid_request"}, status_code=400)
        answer = {"state": query.get("state", ""), "iss": self.url}
        if self.deny or self.signed_in is None:
            answer |= {"error": "access_denied", "error_description": "the user said no"}
        else:
            code = secrets.token_urlsafe(16)
            self.codes[code] = Code(
                self.signed_in,
                client.client_id,
                redirect_uri,
                query["code_challenge"],
                query.get("resource", ""),
                query.get("scope", ""),
            )
            answer["code"] = code
        return RedirectResponse(f"{redirect_uri}?{urlencode(answer)}", status_code=302)

    async def _token(self, request: Request) -> Response:
        form = {key: str(value) for key, value in (await request.form()).items()}
        client = self._authenticated(request, form)
        if client is None:
            return JSONResponse({"error": "invalid_client"}, status_code=401)
        if form.get("grant_type") == "authorization_code":
            code = self.codes.pop(form.get("code", ""), None)
            verifier = form.get("code_verifier", "").encode()
            challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier).digest())
            if (
                code is None
                or code.client_id != client.client_id
                or code.redirect_uri != form.get("redirect_uri")
                or code.challenge != challenge.decode().rstrip("=")
                or code.resource != form.get("resource")
            ):
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            return self._issue("authorization_code", code.user, client, code.scope, code.resource)
        if form.get("grant_type") == "refresh_token":
            issued = self.refresh.pop(form.get("refresh_token", ""), None)
            if (
                issued is None
                or issued.revoked
                or issued.client_id != client.client_id
                or issued.resource != form.get("resource")
            ):
                return JSONResponse({"error": "invalid_grant"}, status_code=400)
            return self._issue("refresh_token", issued.user, client, issued.scope, issued.resource)
        return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)

    def _authenticated(self, request: Request, form: dict[str, str]) -> Client | None:
        basic = request.headers.get("Authorization", "")
        if basic.startswith("Basic "):
            pair = base64.b64decode(basic.removeprefix("Basic ")).decode()
            client_id, _, secret = (unquote(part) for part in pair.partition(":"))
        else:
            client_id, secret = form.get("client_id", ""), form.get("client_secret", "")
        client = self.clients.get(client_id)
        if client is None or (client.secret is not None and client.secret != secret):
            return None
        return client

    def _issue(self, grant: str, user: str, client: Client, scope: str, resource: str) -> Response:
        self.grants.append((grant, user))
        access, refresh = f"at-{secrets.token_urlsafe(24)}", f"rt-{secrets.token_urlsafe(24)}"
        expires_at = time.time() + self.lifetime
        self.access[access] = Issued(user, client.client_id, scope, resource, expires_at)
        self.refresh[refresh] = Issued(user, client.client_id, scope, resource, float("inf"))
        return JSONResponse(
            {
                "access_token": access,
                "token_type": "bearer",
                "expires_in": self.lifetime,
                "refresh_token": refresh,
                "scope": scope,
            }
        )


class _Verifier:
    """The MCP server's token verifier: asks the authorization server's memory."""

    def __init__(self, authorization: AuthorizationServer) -> None:
        self.authorization = authorization

    async def verify_token(self, token: str) -> AccessToken | None:
        return self.authorization.verify(token)


def protected_mcp_app(authorization: AuthorizationServer, url: str) -> Starlette:
    """The MCP server at ``url`` (its path: ``/mcp``), accepting the tokens of
    ``authorization`` issued for it as the resource, with the scope ``notes.read``."""
    server = MCPServer(
        "notes",
        token_verifier=_Verifier(authorization),
        auth=AuthSettings(
            issuer_url=authorization.url,
            resource_server_url=url,
            validate_token_resource=True,
            required_scopes=[SCOPE],
        ),
    )

    @server.tool()
    def whoami() -> str:
        """Says whose account the token that called it is of."""
        token = get_access_token()
        return f"whoami: {token.subject if token is not None else 'nobody'}"

    return server.streamable_http_app()


class Served:
    """An ASGI app served by uvicorn from a thread of the test process."""

    def __init__(self, app: Any, port: int, **options: Any) -> None:
        """``options``: more of uvicorn's (``ssl_certfile``, ``ssl_keyfile``)."""
        config = uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", **options)
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def start(self) -> "Served":
        self.thread.start()
        deadline = time.monotonic() + 10
        while not self.server.started:
            if time.monotonic() > deadline or not self.thread.is_alive():
                raise RuntimeError("the server did not start")
            time.sleep(0.02)
        return self

    def stop(self) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)
