"""Users' own accounts at an MCP server that signs each user in (``oauth``), end to end:
a real gateway, a real MCP server built with the SDK that takes only bearer tokens of its
authorization server (tests/mcp_servers/protected.py), and that authorization server.

A tool call for a user without an account answers a connect link as the tool result;
an HTTP client playing the user's browser follows it through the authorization server
and back; the next calls run with that user's own token, which the gateway refreshes
when it expires or is refused, and forgets when the admin revokes it or the user is
erased. The tokens are never readable in the database.
"""

import re
import sqlite3
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from django.core import signing

from inference.mcpauth.links import CONNECT_SALT
from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.mcp_servers import start_http_greeter
from tests.mcp_servers.protected import SCOPE, AuthorizationServer, Served, protected_mcp_app
from tests.server import GatewayServer, free_port
from tests.upstreams import api_key_of, fake_base_url, sent_tool_calls_and_results

JSON = {"Accept": "application/json"}
SECRET_KEY = "mcp-oauth-test-secret-key"
FIXED_SECRET = "fixed-client-secret-0123"
CONSUMER_SECRET = "consumer-secret-4567"


class World:
    """The authorization server, the MCP server it protects, and the gateway."""

    def __init__(self, auth: AuthorizationServer, mcp_url: str, gateway: GatewayServer) -> None:
        self.auth = auth
        self.mcp_url = mcp_url
        self.gateway = gateway

    def link_pattern(self, server: str) -> re.Pattern[str]:
        return re.compile(re.escape(f"{self.gateway.url}/mcp/{server}/connect?state=") + r"\S+")


@pytest.fixture(scope="module")
def world(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[World]:
    auth = AuthorizationServer()
    greeter_port = free_port()
    greeter = start_http_greeter(greeter_port)
    mcp_port = free_port()
    mcp_url = f"http://127.0.0.1:{mcp_port}/mcp"
    authorization = Served(auth.app(), auth.port).start()
    protected = Served(protected_mcp_app(auth, mcp_url), mcp_port).start()
    port = free_port()
    auth.preregister("gateway-static", f"http://127.0.0.1:{port}/mcp/notes-static/callback")
    fixed_callback = f"http://127.0.0.1:{port}/mcp/notes-fixed/oauth/callback"
    auth.preregister("gateway-fixed", fixed_callback, secret=FIXED_SECRET)
    fake = upstreams["openai"]
    config = f"""\
public_base_url: http://127.0.0.1:{port}
auth:
  mcp_consumer_secret: ${{CONSUMER_SECRET}}
providers:
  openai: {{api_key: {api_key_of("openai")}, base_url: '{fake_base_url(fake)}', timeout: 10}}
mcp:
  notes: {{transport: http, url: '{mcp_url}', oauth: discover}}
  notes-static:
    transport: http
    url: '{mcp_url}'
    oauth: {{scopes: [{SCOPE}], client_id: gateway-static}}
  notes-fixed:   # Coulisse's static mode: endpoints as written, a confidential client
    url: '{mcp_url}'
    oauth:
      mode: static
      authorization_url: {auth.url}/authorize
      token_url: {auth.url}/token
      client_id: gateway-fixed
      client_secret: ${{FIXED_CLIENT_SECRET}}
      redirect_uri: {fixed_callback}
      scopes: [{SCOPE}]
  greeter: {{transport: http, url: 'http://127.0.0.1:{greeter_port}/mcp'}}
  notes-asks: {{url: '{mcp_url}'}}                              # Coulisse's shape
  greeter-asks: {{url: 'http://127.0.0.1:{greeter_port}/mcp'}}  # Coulisse's, no credentials
agents:
  - {{name: notes-agent, provider: openai, model: m, mcp_tools: [{{server: notes, only: [whoami]}}]}}
  - {{name: static-agent, provider: openai, model: m, mcp_tools: [{{server: notes-static, only: [whoami]}}]}}
  - {{name: fixed-agent, provider: openai, model: m, mcp_tools: [{{server: notes-fixed, only: [whoami]}}]}}
  - {{name: asks-agent, provider: openai, model: m, mcp_tools: [{{server: notes-asks, only: [whoami]}}]}}
  - {{name: open-greeter, provider: openai, model: m, mcp_tools: [{{server: greeter-asks, only: [say_hello]}}]}}
  - {{name: open-agent, provider: openai, model: m, mcp_tools: [{{server: notes}}]}}
  - name: mixed-agent
    provider: openai
    model: m
    mcp_tools: [{{server: notes, only: [whoami]}}, {{server: greeter, only: [say_hello]}}]
"""
    gateway = GatewayServer(
        tmp_path_factory.mktemp("mcp-oauth"),
        config,
        extra_env={
            "GATEWAY_SECRET_KEY": SECRET_KEY,
            "FIXED_CLIENT_SECRET": FIXED_SECRET,
            "CONSUMER_SECRET": CONSUMER_SECRET,
        },
    ).start(port=port)
    yield World(auth, mcp_url, gateway)
    gateway.stop()
    protected.stop()
    authorization.stop()
    greeter.terminate()
    greeter.wait()


@pytest.fixture
def user() -> str:
    return f"user-{uuid.uuid4().hex[:10]}"


def chat(world: World, user: str, agent: str = "notes-agent") -> httpx.Response:
    question = {"role": "user", "content": f"Who am I, {user}?"}
    body = {"model": agent, "messages": [question], "user": user}
    answered = httpx.post(f"{world.gateway.url}/v1/chat/completions", json=body, timeout=30)
    assert answered.status_code == 200, answered.text
    return answered


def call_tool(
    world: World, fake: FakeUpstream, user: str, agent: str = "notes-agent", tool: str = "whoami"
) -> str:
    """What the tool answered the model, when it called ``tool`` for ``user``."""
    fake.reset()
    fake.script(Reply.of_tool_calls((tool, {})), Reply.of_text("Done."))
    chat(world, user, agent)
    _, results = sent_tool_calls_and_results("openai", fake.requests[-1].body)
    (result,) = results
    return result[1]


def offered(fake: FakeUpstream) -> dict[str, Any]:
    """The tools the first upstream call of the last turn offered, by name."""
    return {tool["function"]["name"]: tool["function"] for tool in fake.requests[0].body["tools"]}


def connect_link(world: World, result: str, server: str = "notes") -> str:
    found = world.link_pattern(server).search(result)
    assert found is not None, result
    return found.group(0)


def follow(world: World, link: str, signs_in: str) -> httpx.Response:
    """The user's browser following the link, signing in at the authorization server as
    ``signs_in``."""
    world.auth.signed_in = signs_in
    return httpx.get(link, follow_redirects=True, timeout=30)


def connected(
    world: World, fake: FakeUpstream, user: str, signs_in: str, agent: str = "notes-agent"
) -> None:
    server = {
        "static-agent": "notes-static",
        "fixed-agent": "notes-fixed",
        "asks-agent": "notes-asks",
    }.get(agent, "notes")
    link = connect_link(world, call_tool(world, fake, user, agent), server)
    page = follow(world, link, signs_in)
    assert page.status_code == 200, page.text
    assert "is connected" in page.text


def connections_of(world: World, user: str) -> list[dict[str, Any]]:
    listed = httpx.get(
        f"{world.gateway.url}/admin/mcp/connections", params={"user": user}, headers=JSON
    )
    assert listed.status_code == 200, listed.text
    return listed.json()["data"]


def test_a_user_without_an_account_is_given_a_connect_link_as_the_tool_result(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    result = call_tool(world, openai_fake, user)

    assert "has not connected their account at 'notes'" in result
    link = connect_link(world, result)
    assert parse_qs(urlsplit(link).query)["state"]
    # Before the account is connected, the agent's `only` tools are offered as unknowns.
    whoami = offered(openai_fake)["whoami"]
    assert whoami["parameters"] == {"type": "object", "additionalProperties": True}
    assert "'notes'" in whoami["description"]
    assert connections_of(world, user) == []


def test_following_the_link_connects_the_account_and_calls_run_with_the_users_token(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    link = connect_link(world, call_tool(world, openai_fake, user))

    page = follow(world, link, "alice")

    assert page.status_code == 200 and "Your account at" in page.text
    assert [hop.status_code for hop in page.history] == [302, 302]
    asked = world.auth.authorizations[-1]
    assert asked["code_challenge_method"] == "S256" and asked["code_challenge"]
    assert asked["resource"] == world.mcp_url  # RFC 8707
    assert asked["scope"] == SCOPE  # as the MCP server's metadata advertises it
    assert asked["redirect_uri"] == f"{world.gateway.url}/mcp/notes/callback"
    assert world.auth.registrations == 1  # the gateway registered once, for every user
    (connection,) = connections_of(world, user)
    assert connection["server"] == "notes" and connection["scopes"] == [SCOPE]
    assert connection["expires_at"] is not None

    assert call_tool(world, openai_fake, user) == "whoami: alice"
    # Listed from the server with the user's token: its own description of the tool.
    assert offered(openai_fake)["whoami"]["description"].startswith("Says whose account")


def test_a_sign_in_answer_is_good_once(world: World, openai_fake: FakeUpstream, user: str) -> None:
    """The callback's URL (its code and state) sent again, by the browser's history or by
    whoever saw it: 400, and no second token exchange."""
    link = connect_link(world, call_tool(world, openai_fake, user))
    page = follow(world, link, "olga")
    assert page.status_code == 200, page.text
    exchanges = len(world.auth.grants_of("olga"))

    again = httpx.get(str(page.url), timeout=30)

    assert again.status_code == 400, again.text
    assert "completed already" in again.text
    assert len(world.auth.grants_of("olga")) == exchanges == 1


def test_each_user_calls_with_their_own_account(world: World, openai_fake: FakeUpstream) -> None:
    first, second = f"user-{uuid.uuid4().hex[:10]}", f"user-{uuid.uuid4().hex[:10]}"
    first_link = connect_link(world, call_tool(world, openai_fake, first))
    second_link = connect_link(world, call_tool(world, openai_fake, second))
    assert first_link != second_link

    assert follow(world, second_link, "bob").status_code == 200
    assert call_tool(world, openai_fake, second) == "whoami: bob"
    assert "has not connected" in call_tool(world, openai_fake, first)

    assert follow(world, first_link, "carol").status_code == 200
    assert call_tool(world, openai_fake, first) == "whoami: carol"
    assert call_tool(world, openai_fake, second) == "whoami: bob"


def test_concurrent_calls_of_two_users_each_carry_their_own_token(
    world: World, openai_fake: FakeUpstream
) -> None:
    users = {f"user-{uuid.uuid4().hex[:10]}": name for name in ("nina", "oscar")}
    for user, signs_in in users.items():
        connected(world, openai_fake, user, signs_in)
    openai_fake.reset()
    openai_fake.answer_when(has_result, Reply.of_text("Done."))
    openai_fake.answer_when(lambda call: True, Reply.of_tool_calls(("whoami", {})))

    with ThreadPoolExecutor(max_workers=8) as pool:
        list(pool.map(lambda user: chat(world, user), [*users] * 4))

    answered = [call.body for call in openai_fake.requests if has_result(call)]
    assert len(answered) == 8
    for body in answered:
        asker = re.fullmatch(r"Who am I, (\S+)\?", body["messages"][0]["content"])
        _, [(_, result)] = sent_tool_calls_and_results("openai", body)
        assert asker is not None and result == f"whoami: {users[asker.group(1)]}"


def has_result(call: Recorded) -> bool:
    return any(message["role"] == "tool" for message in call.body["messages"])


def test_an_access_token_the_server_refuses_is_refreshed(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    connected(world, openai_fake, user, "dave")
    rejected = len(world.auth.rejected)
    world.auth.revoke_access("dave")

    assert call_tool(world, openai_fake, user) == "whoami: dave"
    assert len(world.auth.rejected) > rejected  # the server answered 401 first
    assert world.auth.grants_of("dave") == ["authorization_code", "refresh_token"]
    assert call_tool(world, openai_fake, user) == "whoami: dave"
    assert world.auth.grants_of("dave") == ["authorization_code", "refresh_token"]


def test_an_expired_access_token_is_refreshed_before_the_call(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    world.auth.lifetime = 1
    try:
        connected(world, openai_fake, user, "erin")
    finally:
        world.auth.lifetime = 3600
    time.sleep(1.2)
    rejected = len(world.auth.rejected)

    assert call_tool(world, openai_fake, user) == "whoami: erin"
    assert world.auth.grants_of("erin") == ["authorization_code", "refresh_token"]
    assert len(world.auth.rejected) == rejected  # refreshed before the server saw it
    (connection,) = connections_of(world, user)  # the refreshed token's expiry was kept
    expires_at = datetime.fromisoformat(connection["expires_at"])
    assert expires_at > datetime.now(UTC) + timedelta(minutes=50)


def test_a_refused_refresh_answers_the_connect_link_again(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    connected(world, openai_fake, user, "frank")
    world.auth.revoke_everything("frank")

    result = call_tool(world, openai_fake, user)

    assert connect_link(world, result)
    assert connections_of(world, user) == []  # the grant is forgotten


def test_the_admin_lists_and_revokes_connections(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    connected(world, openai_fake, user, "gina")
    (connection,) = connections_of(world, user)
    assert set(connection) == {"id", "user", "server", "scopes", "expires_at"}
    page = httpx.get(f"{world.gateway.url}/admin/mcp/connections", params={"user": user})
    assert page.status_code == 200 and user in page.text and "Revoke" in page.text
    url = f"{world.gateway.url}/admin/mcp/connections/{connection['id']}"

    revoked = httpx.delete(url, headers=JSON)

    assert revoked.status_code == 200 and revoked.json() == {
        "id": connection["id"],
        "revoked": True,
    }
    assert connections_of(world, user) == []
    assert connect_link(world, call_tool(world, openai_fake, user))
    assert httpx.delete(url, headers=JSON).status_code == 404


def test_erasing_a_user_removes_their_connections(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    connected(world, openai_fake, user, "hank")

    erased = httpx.delete(f"{world.gateway.url}/admin/users/{user}", headers=JSON, timeout=10)

    assert erased.status_code == 200, erased.text
    assert erased.json()["removed"]["mcp_connections"] == 1
    assert connections_of(world, user) == []
    assert connect_link(world, call_tool(world, openai_fake, user))


def test_a_link_given_before_an_erasure_connects_nothing(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    link = connect_link(world, call_tool(world, openai_fake, user))
    httpx.delete(f"{world.gateway.url}/admin/users/{user}", headers=JSON, timeout=10)

    page = follow(world, link, "ivan")

    assert page.status_code == 400 and "erased" in page.text
    assert connections_of(world, user) == []


def test_tokens_and_client_secrets_are_not_readable_in_the_database(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    connected(world, openai_fake, user, "judy")
    world.auth.revoke_access("judy")
    assert call_tool(world, openai_fake, user) == "whoami: judy"  # a refresh was kept too
    database = Path(world.gateway.workdir) / "gateway.sqlite3"
    with sqlite3.connect(database) as reader:
        rows = reader.execute("SELECT tokens FROM inference_mcpconnection").fetchall()
        registrations = reader.execute("SELECT registration FROM inference_mcpclient").fetchall()
    assert rows and registrations
    stored = b"".join(
        path.read_bytes() for path in database.parent.glob("gateway.sqlite3*") if path.is_file()
    )
    secrets = world.auth.secrets()
    assert len(secrets) > 3
    assert [secret for secret in secrets if secret.encode() in stored] == []
    assert all(secret not in text for (text,) in rows + registrations for secret in secrets)


def test_a_server_given_a_client_id_is_not_registered_with(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    registrations = world.auth.registrations

    connected(world, openai_fake, user, "kate", agent="static-agent")

    asked = world.auth.authorizations[-1]
    assert asked["client_id"] == "gateway-static" and asked["scope"] == SCOPE
    assert world.auth.registrations == registrations
    assert call_tool(world, openai_fake, user, "static-agent") == "whoami: kate"
    # One account per user and server: the other server of the same URL is not connected.
    assert "has not connected" in call_tool(world, openai_fake, user)


def test_a_static_server_signs_in_at_its_endpoints_as_a_confidential_client(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    """Coulisse's ``oauth.mode: static``: nothing discovered or registered, its
    ``redirect_uri`` (Coulisse's callback path) used as written, the secret sent."""
    registrations = world.auth.registrations

    connected(world, openai_fake, user, "lena", agent="fixed-agent")

    asked = world.auth.authorizations[-1]
    assert asked["client_id"] == "gateway-fixed"
    assert asked["redirect_uri"] == f"{world.gateway.url}/mcp/notes-fixed/oauth/callback"
    assert world.auth.registrations == registrations
    assert call_tool(world, openai_fake, user, "fixed-agent") == "whoami: lena"


def test_a_url_server_without_oauth_signs_users_in_only_when_it_asks(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    """Coulisse's URL servers written without ``oauth``: one that answers 401 gets each
    user's account, one that needs no credentials serves everyone without a sign-in."""
    openai_fake.reset()
    openai_fake.script(Reply.of_tool_calls(("say_hello", {"name": "Ana"})), Reply.of_text("Hi."))
    chat(world, user, "open-greeter")
    _, results = sent_tool_calls_and_results("openai", openai_fake.requests[-1].body)
    assert [result for _, result in results] == ["Hello, Ana!"]
    # Listed from the server (its own description), no connect tool, no link.
    assert offered(openai_fake)["say_hello"]["description"] == "Greets someone by name."

    assert "has not connected their account at 'notes-asks'" in call_tool(
        world, openai_fake, user, "asks-agent"
    )
    connected(world, openai_fake, user, "mona", agent="asks-agent")
    assert call_tool(world, openai_fake, user, "asks-agent") == "whoami: mona"


def test_a_script_with_the_consumer_secret_gets_a_users_connect_link(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    """Coulisse's ``POST /mcp/{server}/connect-link``, guarded by auth.mcp_consumer_secret."""

    def ask(server: str, secret: str, **params: str) -> httpx.Response:
        return httpx.post(
            f"{world.gateway.url}/mcp/{server}/connect-link",
            params=params,
            headers={"Authorization": f"Bearer {secret}"},
            timeout=10,
        )

    assert ask("notes", "wrong", user_id=user).status_code == 401
    assert ask("notes", CONSUMER_SECRET).status_code == 422
    assert ask("nothing", CONSUMER_SECRET, user_id=user).status_code == 404
    assert ask("greeter", CONSUMER_SECRET, user_id=user).status_code == 404  # signs no one in
    answer = ask("notes", CONSUMER_SECRET, user_id=user)
    assert answer.status_code == 200, answer.text
    link = answer.json()["url"]
    assert world.link_pattern("notes").fullmatch(link)

    page = follow(world, link, "nina")

    assert page.status_code == 200 and "is connected" in page.text
    assert call_tool(world, openai_fake, user) == "whoami: nina"


def test_an_agent_without_only_offers_a_tool_that_connects_the_account(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    result = call_tool(world, openai_fake, user, "open-agent", "connect_notes")

    assert list(offered(openai_fake)) == ["connect_notes"]
    assert follow(world, connect_link(world, result), "liam").status_code == 200
    assert call_tool(world, openai_fake, user, "open-agent") == "whoami: liam"
    assert list(offered(openai_fake)) == ["whoami"]


def test_a_server_with_a_session_of_its_own_works_beside_one_that_signs_users_in(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    openai_fake.reset()
    openai_fake.script(
        Reply.of_tool_calls(("say_hello", {"name": "Ada"}), ("whoami", {})), Reply.of_text("Hi.")
    )

    chat(world, user, "mixed-agent")

    assert list(offered(openai_fake)) == ["whoami", "say_hello"]
    _, results = sent_tool_calls_and_results("openai", openai_fake.requests[-1].body)
    assert results[0][1] == "Hello, Ada!"
    assert connect_link(world, results[1][1])
    states = {
        name: httpx.get(f"{world.gateway.url}/admin/mcp/{name}/state", headers=JSON).json()
        for name in ("notes", "greeter")
    }
    assert states["notes"]["state"] == "per-user" and states["notes"]["tools"] == []
    assert states["greeter"]["state"] == "connected" and "say_hello" in states["greeter"]["tools"]


def test_bad_links_are_refused_in_plain_words(world: World, user: str) -> None:
    base = world.gateway.url
    expired = _Past(key=SECRET_KEY, salt=CONNECT_SALT, fallback_keys=[]).sign_object(
        {"u": user, "s": "notes", "t": time.time() - 3600}
    )
    cases = {
        f"{base}/mcp/notes/connect?state=forged": "not valid",
        f"{base}/mcp/notes/connect": "not valid",
        f"{base}/mcp/notes/connect?state={expired}": "expired",
        f"{base}/mcp/notes/callback?state=forged&code=x": "not valid",
    }
    for url, words in cases.items():
        answered = httpx.get(url)
        assert answered.status_code == 400, url
        assert answered.headers["Content-Type"].startswith("text/plain"), url
        assert words in answered.text and "Traceback" not in answered.text, url
    unknown = httpx.get(f"{base}/mcp/nowhere/connect?state=forged")
    assert unknown.status_code == 404 and "no MCP server 'nowhere'" in unknown.text


def test_a_link_works_only_for_its_own_server(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    link = connect_link(world, call_tool(world, openai_fake, user))

    answered = httpx.get(link.replace("/mcp/notes/", "/mcp/notes-static/"))

    assert answered.status_code == 400 and "not for the MCP server" in answered.text


def test_a_refused_sign_in_is_said_in_plain_words(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    link = connect_link(world, call_tool(world, openai_fake, user))
    world.auth.deny = True
    try:
        answered = follow(world, link, "mallory")
    finally:
        world.auth.deny = False

    assert answered.status_code == 403 and "access_denied" in answered.text
    assert connections_of(world, user) == []


def test_the_connect_routes_answer_browsers_the_admin_would_refuse(
    world: World, openai_fake: FakeUpstream, user: str
) -> None:
    """A request through a proxy is not loopback: the admin (no auth.admin) refuses it,
    the connect link answers it (the user's browser is anywhere)."""
    link = connect_link(world, call_tool(world, openai_fake, user))
    remote = {"X-Forwarded-For": "203.0.113.9"}

    assert (
        httpx.get(f"{world.gateway.url}/admin/mcp/connections", headers=remote).status_code == 403
    )
    answered = httpx.get(link, headers=remote)

    assert answered.status_code == 302
    assert answered.headers["Location"].startswith(f"{world.auth.url}/authorize?")


class _Past(signing.TimestampSigner):
    """Signs as an hour ago: a connect link that has expired."""

    def timestamp(self) -> str:
        return signing.b62_encode(int(time.time()) - 3600)
