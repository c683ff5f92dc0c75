"""``auth.*.oidc`` against a real OpenID provider on loopback (``tests.idp``): bearer tokens
on ``/v1`` (and the admin), and the browser login to the admin through the provider's page.

One provider and one gateway for the module. The key rotation test comes last: it leaves
the gateway unable to refetch keys for a minute, by design.
"""

import base64
import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from tests.browser import chromium_page, shot
from tests.e2e.test_journeys import config_text
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.idp import IdentityProvider, running_identity_provider
from tests.server import GatewayServer, free_port

V1_CLIENT = "gateway-v1"
ADMIN_CLIENT = "gateway-admin"


@pytest.fixture(scope="module")
def idp() -> Iterator[IdentityProvider]:
    with running_identity_provider() as provider:
        yield provider


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory,
    upstreams: dict[str, OpenAIUpstream],
    idp: IdentityProvider,
) -> Iterator[GatewayServer]:
    port = free_port()
    auth = (
        "auth:\n"
        f"  proxy:\n    oidc: {{issuer_url: '{idp.url}/', client_id: {V1_CLIENT}}}\n"
        "    bind_user: true\n"
        f"  admin:\n    oidc: {{issuer_url: '{idp.url}/', client_id: {ADMIN_CLIENT}, "
        f"redirect_url: 'http://127.0.0.1:{port}/admin/', scopes: [email, profile]}}\n"
    )
    text = config_text(upstreams["openai"], "first", extra=auth)
    gateway = GatewayServer(tmp_path_factory.mktemp("oidc"), text).start(port)
    yield gateway
    gateway.stop()


def v1(server: GatewayServer, token: str) -> httpx.Response:
    return httpx.get(
        f"{server.url}/v1/models", headers={"Authorization": f"Bearer {token}"}, timeout=30
    )


def claims(idp: IdentityProvider, **overrides: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": idp.url, "aud": V1_CLIENT, "sub": "bob", "exp": now + 600, **overrides}


def tampered(token: str) -> str:
    header, payload, signature = token.split(".")
    padded = payload + "=" * (-len(payload) % 4)
    body = json.loads(base64.urlsafe_b64decode(padded))
    body["sub"] = "mallory"
    forged = base64.urlsafe_b64encode(json.dumps(body).encode()).decode().rstrip("=")
    return f"{header}.{forged}.{signature}"


def test_proxy_oidc_bearer_id_token_binds_its_subject(
    server: GatewayServer, idp: IdentityProvider, openai_fake: OpenAIUpstream
) -> None:
    subject = f"ada-{uuid.uuid4().hex[:6]}@example.org"
    client = openai.OpenAI(
        base_url=f"{server.url}/v1", api_key=idp.id_token(V1_CLIENT, subject), max_retries=0
    )
    marker = f"oidc-{uuid.uuid4().hex[:8]}"

    client.chat.completions.create(
        model="first",
        messages=[{"role": "user", "content": marker}],
        extra_body={"safety_identifier": "someone-else"},
    )

    admin_token = idp.id_token(ADMIN_CLIENT, "ops@example.org")
    history = httpx.get(
        f"{server.url}/admin/conversations",
        params={"user": subject},
        headers={"Authorization": f"Bearer {admin_token}", "Accept": "application/json"},
    )
    assert history.status_code == 200
    assert marker in [message["content"] for message in history.json()["data"]]


@pytest.mark.parametrize(
    "case", ["tampered", "expired", "not-yet-valid", "wrong-audience", "wrong-issuer", "no-sub"]
)
def test_proxy_oidc_invalid_tokens_are_401(
    server: GatewayServer, idp: IdentityProvider, case: str
) -> None:
    now = int(time.time())
    token = {
        "tampered": lambda: tampered(idp.id_token(V1_CLIENT, "bob")),
        "expired": lambda: idp.sign(claims(idp, exp=now - 600)),
        "not-yet-valid": lambda: idp.sign(claims(idp, nbf=now + 600)),
        "wrong-audience": lambda: idp.sign(claims(idp, aud="another-client")),
        "wrong-issuer": lambda: idp.sign(claims(idp, iss="http://idp.attacker.example")),
        "no-sub": lambda: idp.sign({k: v for k, v in claims(idp).items() if k != "sub"}),
    }[case]()

    response = v1(server, token)

    assert response.status_code == 401
    assert 'error="invalid_token"' in response.headers["WWW-Authenticate"]
    assert response.headers["WWW-Authenticate"].startswith("Bearer")
    assert response.json()["error"]["code"] == "invalid_token"


def test_proxy_oidc_accepts_a_token_the_provider_signed(
    server: GatewayServer, idp: IdentityProvider
) -> None:
    assert v1(server, idp.sign(claims(idp))).status_code == 200
    assert v1(server, idp.sign(claims(idp, aud=["other", V1_CLIENT]))).status_code == 200


def test_proxy_oidc_without_a_bearer_token_is_401(server: GatewayServer) -> None:
    missing = httpx.get(f"{server.url}/v1/models")
    basic = httpx.get(f"{server.url}/v1/models", auth=("admin", "secret"))

    for response in (missing, basic):
        assert response.status_code == 401
        assert response.headers["WWW-Authenticate"].startswith("Bearer")


def test_admin_oidc_refuses_other_clients_tokens_and_anonymous_scripts(
    server: GatewayServer, idp: IdentityProvider
) -> None:
    json_accept = {"Accept": "application/json"}
    anonymous = httpx.get(f"{server.url}/admin/agents", headers=json_accept)
    spec = httpx.get(f"{server.url}/admin/openapi.json")
    other = httpx.get(
        f"{server.url}/admin/agents",
        headers={"Authorization": f"Bearer {idp.id_token(V1_CLIENT, 'x')}", **json_accept},
    )

    assert (
        anonymous.status_code == 401 and "/admin/auth/login" in anonymous.json()["error"]["message"]
    )
    assert spec.status_code == 302
    assert spec.headers["Location"].startswith("/admin/auth/login?next=")
    assert other.status_code == 401 and other.json()["error"]["code"] == "invalid_token"


@pytest.mark.browser
def test_admin_oidc_browser_login_and_logout(server: GatewayServer, idp: IdentityProvider) -> None:
    with chromium_page() as page:
        page.goto(f"{server.url}/admin/agents")
        page.wait_for_url(f"{idp.url}/oauth2/authorize*")
        assert "code_challenge_method=S256" in page.url and "nonce=" in page.url
        assert "scope=openid+email+profile" in page.url
        shot(page, "oidc-provider-login")

        page.fill("#subject-input", "grace@example.org")
        page.click("button:text('Authorize')")
        page.wait_for_url(f"{server.url}/admin/agents")
        assert page.locator("header").get_by_text("grace@example.org").is_visible()
        assert page.get_by_role("link", name="first").is_visible()
        shot(page, "oidc-logged-in")

        page.click("button:text('Log out')")
        page.wait_for_url(f"{idp.url}/oauth2/end_session*")
        page.click("button:text('End session')")
        page.wait_for_url(f"{server.url}/admin/auth/logged-out")
        shot(page, "oidc-logged-out")

        page.goto(f"{server.url}/admin/agents")
        page.wait_for_url(f"{idp.url}/oauth2/authorize*")


def test_admin_oidc_callback_with_a_forged_state_is_refused(server: GatewayServer) -> None:
    response = httpx.get(
        f"{server.url}/admin/auth/callback",
        params={"state": "forged", "code": "stolen"},
        headers={"Accept": "application/json"},
    )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "login_failed"


def test_proxy_oidc_key_rotation_is_picked_up_once_a_minute(
    server: GatewayServer, idp: IdentityProvider
) -> None:
    old = idp.id_token(V1_CLIENT, "carol")
    assert v1(server, old).status_code == 200
    fetches = idp.jwks_fetches()

    idp.rotate_key()
    new = idp.id_token(V1_CLIENT, "carol")

    assert v1(server, new).status_code == 200
    assert idp.jwks_fetches() == fetches + 1
    assert v1(server, old).status_code == 401  # its key is no longer published
    idp.rotate_key()
    assert v1(server, idp.id_token(V1_CLIENT, "carol")).status_code == 401
    assert idp.jwks_fetches() == fetches + 1  # no second refetch within the minute


@pytest.mark.parametrize("state", ["forged", "forgé"], ids=["ascii", "non-ascii"])
def test_admin_oidc_callback_with_a_forged_state_during_a_login_is_refused(
    server: GatewayServer, state: str
) -> None:
    with httpx.Client(base_url=server.url) as browser:
        started = browser.get("/admin/auth/login")  # the session now holds a pending login
        assert started.status_code == 302
        response = browser.get(
            "/admin/auth/callback",
            params={"state": state, "code": "stolen"},
            headers={"Accept": "application/json"},
        )

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "login_failed"
