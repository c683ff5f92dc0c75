"""``auth.proxy`` and ``auth.admin`` with Basic credentials, on one real server.

The proxy's password is a Django hash and its username left out (the original format's
default, ``admin``); the admin has a plain password under its own username. ``bind_user``
makes the Basic username the user id on ``/v1``.
"""

import base64
import re
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from django.contrib.auth.hashers import make_password
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.e2e.test_journeys import config_text
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.server import GatewayServer

PROXY_PASSWORD = "proxy-secret"
PROXY_HASH = make_password(PROXY_PASSWORD)
ADMIN = ("ops", "admin-secret")


def basic(username: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, OpenAIUpstream]
) -> Iterator[GatewayServer]:
    auth = (
        "auth:\n"
        f"  proxy:\n    basic: {{password: '{PROXY_HASH}'}}\n    bind_user: true\n"
        f"  admin:\n    basic: {{username: {ADMIN[0]}, password: {ADMIN[1]}}}\n"
    )
    text = config_text(upstreams["openai"], "first", extra=auth)
    gateway = GatewayServer(tmp_path_factory.mktemp("basic"), text).start()
    yield gateway
    gateway.stop()


def v1_models(server: GatewayServer, headers: dict[str, str]) -> httpx.Response:
    return httpx.get(f"{server.url}/v1/models", headers=headers, timeout=30)


def test_proxy_basic_default_username_with_hashed_password(server: GatewayServer) -> None:
    assert v1_models(server, basic("admin", PROXY_PASSWORD)).status_code == 200
    assert v1_models(server, basic("admin", PROXY_PASSWORD)).status_code == 200  # remembered


@pytest.mark.parametrize(
    ("username", "password"),
    [("alice", PROXY_PASSWORD), ("admin", "wrong"), ("admin", PROXY_HASH), ("admin", "")],
    ids=["wrong-user", "wrong-password", "hash-as-password", "empty-password"],
)
def test_proxy_basic_wrong_credentials_are_401(
    server: GatewayServer, username: str, password: str
) -> None:
    response = v1_models(server, basic(username, password))

    assert response.status_code == 401
    assert response.headers["WWW-Authenticate"].startswith("Basic")
    assert response.json()["error"]["code"] == "invalid_credentials"


def test_proxy_basic_refuses_a_bearer_token(server: GatewayServer) -> None:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key=PROXY_PASSWORD, max_retries=0)

    with pytest.raises(openai.AuthenticationError) as refused:
        client.models.list()
    assert refused.value.response.headers["WWW-Authenticate"].startswith("Basic")


def test_proxy_every_v1_route_checks_before_the_body(server: GatewayServer) -> None:
    for method, path in [
        ("GET", "/v1/models/first"),
        ("POST", "/v1/chat/completions"),
        ("POST", "/v1/responses"),
        ("GET", "/v1/unknown"),
    ]:
        response = httpx.request(method, f"{server.url}{path}", content=b"{not json")
        assert response.status_code == 401, path
        assert response.json()["error"]["type"] == "authentication_error"


def test_proxy_bind_user_makes_the_username_the_user_id(
    server: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    claimed = f"someone-else-{uuid.uuid4().hex[:8]}"
    client = openai.OpenAI(
        base_url=f"{server.url}/v1",
        api_key="unused",
        default_headers={**basic("admin", PROXY_PASSWORD), "X-User-Id": claimed},
        max_retries=0,
    )
    marker = f"bound-{uuid.uuid4().hex[:8]}"

    client.chat.completions.create(
        model="first",
        messages=[{"role": "user", "content": marker}],
        extra_body={"safety_identifier": claimed, "user": claimed},
    )

    admin = httpx.Client(base_url=f"{server.url}/admin", headers=basic(*ADMIN))
    mine = admin.get(
        "/conversations", params={"user": "admin"}, headers={"Accept": "application/json"}
    )
    theirs = admin.get(
        "/conversations", params={"user": claimed}, headers={"Accept": "application/json"}
    )
    assert marker in [message["content"] for message in mine.json()["data"]]
    assert theirs.json()["data"] == []


def peak_rss_kib(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    match = re.search(r"^VmHWM:\s+(\d+) kB", status, re.MULTILINE)
    assert match is not None
    return int(match.group(1))


@pytest.mark.parametrize(("mib", "status"), [(20, 413), (8, 401)])
def test_proxy_unauthenticated_big_body_is_refused_unparsed(
    server: GatewayServer, mib: int, status: int
) -> None:
    """Over limits.max_body_mb: 413 whoever sends it; under it, without credentials: 401.
    Either way before the body is parsed."""
    message = b'{"role":"user","content":"x"},'
    count = mib * 1024 * 1024 // len(message)
    body = b'{"model":"first","messages":[' + message * count + b'{"role":"user","content":"x"}]}'
    assert server.pid is not None
    before = peak_rss_kib(server.pid)

    response = httpx.post(
        f"{server.url}/v1/chat/completions",
        content=body,
        headers={"Content-Type": "application/json", **basic("admin", "wrong")},
        timeout=60,
    )

    growth_mib = (peak_rss_kib(server.pid) - before) / 1024
    assert response.status_code == status
    assert growth_mib < 50, f"peak RSS grew by {growth_mib:.1f} MiB"


# ---- the admin ------------------------------------------------------------------------


def test_admin_basic_without_credentials_is_401_with_a_challenge(server: GatewayServer) -> None:
    for path in ("/admin/agents", "/admin/openapi.json", "/admin/"):
        response = httpx.get(f"{server.url}{path}", headers={"Accept": "application/json"})
        assert response.status_code == 401, path
        assert response.headers["WWW-Authenticate"].startswith("Basic"), path
    wrong = httpx.get(f"{server.url}/admin/agents", headers=basic(ADMIN[0], "nope"))
    assert wrong.status_code == 401
    proxy_pair = httpx.get(f"{server.url}/admin/agents", headers=basic("admin", PROXY_PASSWORD))
    assert proxy_pair.status_code == 401


def test_admin_basic_is_reachable_from_any_address_and_host(server: GatewayServer) -> None:
    remote = {"X-Forwarded-For": "203.0.113.9", "Host": "gateway.example.org"}

    response = httpx.get(
        f"{server.url}/admin/agents",
        headers={**basic(*ADMIN), **remote, "Accept": "application/json"},
    )
    spec = httpx.get(f"{server.url}/admin/openapi.json", headers={**basic(*ADMIN), **remote})

    assert response.status_code == 200
    assert [agent["name"] for agent in response.json()] == ["first"]
    assert spec.status_code == 200 and spec.json()["openapi"].startswith("3.1")


def test_admin_basic_writes_record_the_username_as_author(server: GatewayServer) -> None:
    admin = httpx.Client(base_url=f"{server.url}/admin", headers=basic(*ADMIN))
    name = f"agent-{uuid.uuid4().hex[:6]}"

    created = admin.post("/agents", json={"name": name, "provider": "openai", "model": "m"})
    revisions = admin.get("/revisions", headers={"Accept": "application/json"}).json()["data"]

    assert created.status_code == 201
    assert revisions[0]["author"] == f"{ADMIN[0]} (127.0.0.1)"


def test_admin_basic_may_add_a_stdio_server_and_move_a_provider(server: GatewayServer) -> None:
    """With auth.admin, what the open admin refuses is an ordinary write."""
    admin = httpx.Client(base_url=f"{server.url}/admin", headers=basic(*ADMIN))
    name = f"local-{uuid.uuid4().hex[:6]}"

    shown = admin.get("/providers/openai", headers={"Accept": "application/json"}).json()

    added = admin.post("/mcp", json={"name": name, "transport": "stdio", "command": "/bin/true"})
    moved = admin.put("/providers/openai", json={**shown, "base_url": "http://127.0.0.1:9/v1"})

    assert (added.status_code, moved.status_code) == (201, 200), (added.text, moved.text)
    assert admin.delete(f"/mcp/{name}").status_code == 204
    assert admin.put("/providers/openai", json=shown).status_code == 200


def test_health_probes_stay_open_under_auth(server: GatewayServer) -> None:
    assert httpx.get(f"{server.url}/healthz").status_code == 200
    assert httpx.get(f"{server.url}/readyz").status_code == 200


def test_admin_live_websocket_needs_the_admin_credentials(server: GatewayServer) -> None:
    """A websocket skips Django's middleware: the handshake itself is checked."""
    url = f"ws://127.0.0.1:{server.port}/admin/live"
    origin = f"http://127.0.0.1:{server.port}"
    for headers in ({}, basic(ADMIN[0], "wrong")):
        with pytest.raises(InvalidStatus):
            connect(url, origin=origin, additional_headers=headers, open_timeout=10)
    with connect(url, origin=origin, additional_headers=basic(*ADMIN), open_timeout=10) as socket:
        assert "Connected" in str(socket.recv(timeout=10))


def test_proxy_basic_header_that_is_not_base64_ascii_is_401(server: GatewayServer) -> None:
    for header in ("Basic é", "Basic !!!", "Basic"):
        response = httpx.get(
            f"{server.url}/v1/models", headers={"Authorization": header.encode("latin-1")}
        )
        assert response.status_code == 401, header
        assert response.json()["error"]["type"] == "authentication_error"


def test_metrics_need_the_admins_credentials(server: GatewayServer) -> None:
    url = f"{server.url}/metrics"

    refused = httpx.get(url, timeout=30)
    assert refused.status_code == 401
    assert refused.headers["WWW-Authenticate"].startswith("Basic")
    assert httpx.get(url, headers=basic(*ADMIN), timeout=30).status_code == 200
