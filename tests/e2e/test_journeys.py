"""Whole journeys that need their own gateway processes: hand edits of the config,
client disconnects, two processes sharing one database, and PostgreSQL."""

import base64
import json
import sqlite3
import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import openai
import pytest
from django.contrib.auth.hashers import make_password

from tests.fakes.base import FakeUpstream, Reply
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.polling import wait_for
from tests.server import GatewayServer


def config_text(fake: OpenAIUpstream, *agents: str, extra: str = "") -> str:
    lines = [
        "# Hand-written config used by the journey tests",
        "default_user_id: main",
        f"providers:\n  openai: {{api_key: sk-journey, base_url: '{fake.base_url}'}}",
        "agents:",
    ]
    lines += [f"  - {{name: {name}, provider: openai, model: m-{name}}}" for name in agents]
    return "\n".join(lines) + "\n" + extra


def model_ids(server: GatewayServer) -> list[str]:
    return [model["id"] for model in httpx.get(f"{server.url}/v1/models").json()["data"]]


@pytest.fixture
def own_gateway(tmp_path: Path, openai_fake: OpenAIUpstream) -> Iterator[GatewayServer]:
    """A gateway whose config file the test may rewrite."""
    server = GatewayServer(tmp_path, config_text(openai_fake, "first")).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def shared_gateway(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    """The tests that leave the config as it is share one gateway of their own."""
    fake = upstreams["openai"]
    assert isinstance(fake, OpenAIUpstream)
    server = GatewayServer(tmp_path_factory.mktemp("journeys"), config_text(fake, "first"))
    yield server.start()
    server.stop()


def test_hand_edits_reload_live_and_broken_edits_are_logged_and_ignored(
    own_gateway: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    assert model_ids(own_gateway) == ["first"]

    own_gateway.config_path.write_text(config_text(openai_fake, "first", "second"))
    wait_for(lambda: model_ids(own_gateway) == ["first", "second"], "the added agent")

    broken = (
        config_text(openai_fake, "first", "second")
        + "  - {name: third, provider: cohere, model: x}\n"
    )
    own_gateway.config_path.write_text(broken)
    message = "agents[2].provider: provider 'cohere' is not configured"
    wait_for(lambda: message in own_gateway.log(), "the rejection in the log")
    assert model_ids(own_gateway) == ["first", "second"]
    readiness = httpx.get(f"{own_gateway.url}/readyz").json()
    assert readiness["config"] == "ok" and readiness["database"] == "ok"

    # default_user_id identifies requests that carry no user.
    client = openai.OpenAI(base_url=f"{own_gateway.url}/v1", api_key="x", max_retries=0)
    reply = client.chat.completions.create(
        model="second", messages=[{"role": "user", "content": "yo"}]
    )
    assert reply.choices[0].message.content == "You said: yo"
    assert openai_fake.last.body["model"] == "m-second"

    own_gateway.config_path.write_text(config_text(openai_fake, "first", "third"))
    wait_for(lambda: model_ids(own_gateway) == ["first", "third"], "the fixed config")

    # Bytes that are not UTF-8 are one more invalid edit: the watcher keeps going.
    own_gateway.config_path.write_bytes(config_text(openai_fake, "first").encode() + b"\xff\xfe")
    wait_for(lambda: "not UTF-8 text" in own_gateway.log(), "the rejection of the bytes")
    own_gateway.config_path.write_text(config_text(openai_fake, "fourth"))
    wait_for(lambda: model_ids(own_gateway) == ["fourth"], "the edit after the bad bytes")


def test_each_request_writes_one_json_log_line_and_nothing_else_does(
    shared_gateway: GatewayServer,
) -> None:
    request_id = uuid.uuid4().hex
    httpx.post(
        f"{shared_gateway.url}/v1/chat/completions",
        json={
            "model": "first",
            "messages": [{"role": "user", "content": "x"}],
            "safety_identifier": "log-user",
        },
        headers={"X-Request-ID": request_id},
    )
    httpx.get(f"{shared_gateway.url}/admin/", headers={"X-Request-ID": f"{request_id}-admin"})
    wait_for(lambda: f"{request_id}-admin" in shared_gateway.log(), "the admin request's line")

    lines = [json.loads(line) for line in shared_gateway.log().splitlines()]  # all JSON
    requests = [line for line in lines if line["event"] == "request"]
    (chat,) = [line for line in requests if line["request_id"] == request_id]
    assert {key: chat[key] for key in ("user", "agent", "provider", "status", "tokens")} == {
        "user": "log-user",
        "agent": "first",
        "provider": "openai",
        "status": 200,
        "tokens": 18,
    }
    assert {"latency_ms", "variant", "experiment", "time", "level"} <= chat.keys()
    assert [line["request_id"] for line in requests].count(f"{request_id}-admin") == 1
    assert any(line["event"] == "config_loaded" for line in lines)
    served = shared_gateway.stdout_path.read_text().splitlines()
    assert served == [
        f"Serving on http://127.0.0.1:{shared_gateway.port}  (admin: /admin, API: /v1)"
    ]


def stored_messages(server: GatewayServer, user: str) -> list[tuple[str, str]]:
    with sqlite3.connect(server.workdir / "gateway.sqlite3") as database:
        return database.execute(
            "SELECT role, content FROM inference_storedmessage WHERE user_id = ? ORDER BY id",
            (user,),
        ).fetchall()


def test_client_disconnect_cancels_upstream_and_keeps_the_partial_reply(
    shared_gateway: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    words = [f"w{index} " for index in range(400)]
    openai_fake.script(Reply.of_chunks(*words, chunk_delay=0.02))
    body = {
        "model": "first",
        "messages": [{"role": "user", "content": "long story"}],
        "safety_identifier": "leaver",
        "stream": True,
    }
    with httpx.stream("POST", f"{shared_gateway.url}/v1/chat/completions", json=body) as response:
        lines = response.iter_lines()
        received = [line for _, line in zip(range(8), lines, strict=False)]
    assert any('"content":"w0 "' in line for line in received)

    wait_for(lambda: openai_fake.requests[-1].disconnected, "the upstream connection to close")
    wait_for(lambda: len(stored_messages(shared_gateway, "leaver")) == 2, "the partial exchange")
    (user_role, question), (assistant_role, partial) = stored_messages(shared_gateway, "leaver")
    assert (user_role, question, assistant_role) == ("user", "long story", "assistant")
    assert partial.startswith("w0 w1 ") and len(partial) < len("".join(words))


@pytest.mark.slow
def test_two_processes_share_budgets_and_history(
    tmp_path: Path, openai_fake: OpenAIUpstream
) -> None:
    first = GatewayServer(tmp_path, config_text(openai_fake, "first")).start()
    second = GatewayServer(tmp_path, config_text(openai_fake, "first")).start()
    try:
        shared_database_journey(first, second, openai_fake)
    finally:
        first.stop()
        second.stop()


def shared_database_journey(
    first: GatewayServer, second: GatewayServer, fake: OpenAIUpstream
) -> None:
    one = openai.OpenAI(base_url=f"{first.url}/v1", api_key="x", max_retries=0)
    two = openai.OpenAI(base_url=f"{second.url}/v1", api_key="x", max_retries=0)
    fake.script(Reply.of_text("Blue.", prompt_tokens=30, completion_tokens=20))
    one.chat.completions.create(
        model="first",
        messages=[{"role": "user", "content": "Favourite colour?"}],
        safety_identifier="shared",
    )
    # A NUL character is legal in JSON but not in PostgreSQL text: stored as U+FFFD.
    two.chat.completions.create(
        model="first",
        messages=[{"role": "user", "content": "Why\x00?"}],
        safety_identifier="shared",
    )
    assert fake.last.body["messages"] == [
        {"role": "user", "content": "Favourite colour?"},
        {"role": "assistant", "content": "Blue."},
        {"role": "user", "content": "Why\x00?"},
    ]
    one.chat.completions.create(
        model="first", messages=[{"role": "user", "content": "Sure?"}], safety_identifier="shared"
    )
    assert fake.last.body["messages"][2] == {"role": "user", "content": "Why\ufffd?"}
    with pytest.raises(openai.RateLimitError):
        one.chat.completions.create(
            model="first",
            messages=[{"role": "user", "content": "More?"}],
            safety_identifier="shared",
            metadata={"tokens_per_day": "60"},
        )


@pytest.mark.slow
def test_two_processes_on_postgresql(
    tmp_path: Path, openai_fake: OpenAIUpstream, postgres_url: str
) -> None:
    text = config_text(openai_fake, "first")
    first = GatewayServer(tmp_path, text, database_url=postgres_url).start()
    second = GatewayServer(tmp_path, text, database_url=postgres_url).start()
    try:
        assert httpx.get(f"{first.url}/readyz").json()["database"] == "ok"
        shared_database_journey(first, second, openai_fake)
    finally:
        first.stop()
        second.stop()


def basic(username: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


@pytest.mark.parametrize(
    "stored", ["plain-secret", make_password("plain-secret")], ids=["plain", "hash"]
)
def test_proxy_basic_auth_guards_v1(
    tmp_path: Path, openai_fake: OpenAIUpstream, stored: str
) -> None:
    auth = f"auth:\n  proxy:\n    basic: {{username: team, password: '{stored}'}}\n"
    server = GatewayServer(tmp_path, config_text(openai_fake, "first", extra=auth)).start()
    try:
        refused = httpx.get(f"{server.url}/v1/models")
        assert refused.status_code == 401
        assert refused.headers["www-authenticate"].startswith("Basic")
        assert refused.json()["error"]["type"] == "authentication_error"
        wrong = httpx.get(f"{server.url}/v1/models", headers=basic("team", "nope"))
        assert wrong.status_code == 401
        client = openai.OpenAI(
            base_url=f"{server.url}/v1",
            api_key="unused",
            default_headers=basic("team", "plain-secret"),
            max_retries=0,
        )
        reply = client.chat.completions.create(
            model="first", messages=[{"role": "user", "content": "hi"}]
        )
        assert reply.choices[0].message.content == "You said: hi"
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0).models.list()
    finally:
        server.stop()
