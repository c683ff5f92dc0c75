"""A sign-in's discovery stays confined (docs/mcp.md): MCP servers that name, in their 401
or their metadata, what the gateway must not trust. Each connect link is refused with
the reason (502), and nothing the gateway holds (a code, a PKCE verifier, a client
registration) goes where it should not. The address rules themselves, which a
loopback-only machine cannot reach, are unit tests (tests/unit/test_mcp_oauth_confinement.py).
"""

import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import trustme
from django.core import signing
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, RedirectResponse, Response
from starlette.routing import Route

from inference.mcpauth.links import CONNECT_SALT
from tests.fakes.base import FakeUpstream
from tests.mcp_servers.protected import Served
from tests.server import GatewayServer, free_port
from tests.upstreams import api_key_of, fake_base_url

SECRET_KEY = "mcp-confinement-test-secret-key"


class Rogue:
    """An HTTP server that answers what the test scripts by path, and keeps every
    request it got (method and path)."""

    def __init__(self, routes: dict[str, Any], **options: Any) -> None:
        self.port = free_port()
        self.seen: list[str] = []
        self.routes = routes

        async def answer(request: Request) -> Response:
            self.seen.append(f"{request.method} {request.url.path}")
            made = self.routes.get(request.url.path)
            return made(request) if made is not None else Response(status_code=404)

        app = Starlette(routes=[Route("/{path:path}", answer, methods=["GET", "POST"])])
        self.served = Served(app, self.port, **options)

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}"


def challenge(metadata_url: str) -> Any:
    header = f'Bearer resource_metadata="{metadata_url}"'
    return lambda request: Response(status_code=401, headers={"WWW-Authenticate": header})


def document(body: dict[str, Any]) -> Any:
    return lambda request: JSONResponse(body)


def auth_metadata(issuer: str, base: str) -> dict[str, Any]:
    return {
        "issuer": issuer,
        "authorization_endpoint": f"{base}/authorize",
        "token_endpoint": f"{base}/token",
        "registration_endpoint": f"{base}/register",
        "response_types_supported": ["code"],
        "code_challenge_methods_supported": ["S256"],
    }


class World:
    def __init__(self, here: Rogue, elsewhere: Rogue, tls: Rogue, gateway: GatewayServer) -> None:
        self.here, self.elsewhere, self.tls, self.gateway = here, elsewhere, tls, gateway

    def connect(self, server: str) -> httpx.Response:
        """The user's browser opening a valid connect link for ``server``."""
        state = signing.dumps(
            {"u": f"user-{uuid.uuid4().hex[:8]}", "s": server, "t": time.time()},
            key=SECRET_KEY,
            salt=CONNECT_SALT,
        )
        return httpx.get(
            f"{self.gateway.url}/mcp/{server}/connect", params={"state": state}, timeout=30
        )


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[World]:
    workdir = tmp_path_factory.mktemp("mcp-confinement")
    ca = trustme.CA()
    certificate = ca.issue_cert("127.0.0.1")
    certfile, keyfile, bundle = (workdir / name for name in ("cert.pem", "key.pem", "ca.pem"))
    certificate.cert_chain_pems[0].write_to_path(str(certfile))
    certificate.private_key_pem.write_to_path(str(keyfile))
    ca.cert_pem.write_to_path(str(bundle))

    elsewhere = Rogue({})
    here = Rogue({})
    tls = Rogue({}, ssl_certfile=str(certfile), ssl_keyfile=str(keyfile))
    at, away = here.url(), elsewhere.url()
    elsewhere.routes.update(
        {
            "/meta": document({"resource": f"{away}/mcp", "authorization_servers": [away]}),
            "/.well-known/oauth-authorization-server": document(auth_metadata(away, away)),
        }
    )
    here.routes.update(
        {
            "/mcp/port-hop": challenge(f"{away}/meta"),
            "/mcp/other-resource": challenge(f"{at}/meta/other-resource"),
            "/meta/other-resource": document(
                {"resource": f"{at}/mcp/somebody-else", "authorization_servers": [at]}
            ),
            "/mcp/other-issuer": challenge(f"{at}/meta/other-issuer"),
            "/meta/other-issuer": document(
                {"resource": f"{at}/mcp/other-issuer", "authorization_servers": [f"{at}/as"]}
            ),
            "/.well-known/oauth-authorization-server/as": document(
                auth_metadata(f"{at}/impostor", at)
            ),
            "/mcp/redirected": challenge(f"{at}/moved"),
            "/moved": lambda request: RedirectResponse(f"{away}/meta", status_code=302),
        }
    )
    tls.routes["/mcp/tls"] = challenge(f"{away}/meta")
    for server in (elsewhere, here, tls):
        server.served.start()

    port = free_port()
    servers = {
        "port-hop": f"{at}/mcp/port-hop",
        "other-resource": f"{at}/mcp/other-resource",
        "other-issuer": f"{at}/mcp/other-issuer",
        "redirected": f"{at}/mcp/redirected",
        "tls": f"{tls.url('https')}/mcp/tls",
    }
    mcp = "".join(
        f"  {name}: {{transport: http, url: '{url}', oauth: discover}}\n"
        for name, url in servers.items()
    )
    fake = upstreams["openai"]
    config = (
        f"public_base_url: http://127.0.0.1:{port}\n"
        f"providers:\n  openai: {{api_key: {api_key_of('openai')}, "
        f"base_url: '{fake_base_url(fake)}'}}\n"
        f"mcp:\n{mcp}"
        "agents:\n  - {name: plain, provider: openai, model: m}\n"
    )
    env = {"GATEWAY_SECRET_KEY": SECRET_KEY, "SSL_CERT_FILE": str(bundle)}
    gateway = GatewayServer(Path(workdir), config, extra_env=env).start(port=port)
    yield World(here, elsewhere, tls, gateway)
    gateway.stop()
    for server in (elsewhere, here, tls):
        server.served.stop()


@pytest.fixture(autouse=True)
def forget(world: World) -> None:
    for server in (world.here, world.elsewhere, world.tls):
        server.seen.clear()


def refused(answer: httpx.Response, words: str) -> None:
    assert answer.status_code == 502, answer.text
    assert answer.headers["Content-Type"].startswith("text/plain")
    assert words in answer.text, answer.text


def test_an_https_mcp_server_naming_plain_http_metadata_on_another_port_is_refused(
    world: World,
) -> None:
    refused(world.connect("tls"), "is not https")
    assert world.tls.seen == ["POST /mcp/tls"]
    assert world.elsewhere.seen == []  # never contacted


def test_metadata_on_another_port_must_name_the_mcp_server_as_its_resource(
    world: World,
) -> None:
    refused(world.connect("port-hop"), "metadata is for another resource")
    # Read, and refused: nothing was registered there, no code or verifier sent.
    assert world.elsewhere.seen == ["GET /meta"]


def test_metadata_naming_another_resource_is_refused(world: World) -> None:
    refused(world.connect("other-resource"), "metadata is for another resource")
    assert not [seen for seen in world.here.seen if seen.startswith("POST /register")]


def test_an_authorization_server_whose_issuer_does_not_match_is_refused(world: World) -> None:
    refused(world.connect("other-issuer"), "names the issuer")
    assert not [seen for seen in world.here.seen if "/register" in seen or "/token" in seen]


def test_a_redirecting_metadata_url_is_refused_not_followed(world: World) -> None:
    refused(world.connect("redirected"), "answered a redirect")
    assert world.elsewhere.seen == []
