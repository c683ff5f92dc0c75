"""Minted API keys on ``/v1``, with the official OpenAI SDK: a key's user, its agents, its
rate and spend limits (exact under concurrency, on SQLite and PostgreSQL), revocation,
and the admin routes and management commands that manage keys."""

import re
import subprocess
import sys
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types
from playwright.sync_api import Page, expect

from tests.browser import chromium_page, shot
from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.keys import mint
from tests.polling import wait_for
from tests.server import PROJECT_DIR, GatewayServer

JSON = {"Accept": "application/json"}
# One token costs exactly 1000 micro-USD, so a call's cost is its tokens in thousandths.
CONFIG = """\
auth: {{proxy: {{api_keys: true}}}}
providers:
  openai: {{api_key: sk-upstream, base_url: '{url}', retries: {{attempts: 0}}}}
agents:
  - {{name: assistant, provider: openai, model: priced}}
  - {{name: other, provider: openai, model: priced}}
  - {{name: loop0, provider: openai, model: priced, subagents: [loop1]}}
  - {{name: loop1, provider: openai, model: priced, subagents: [loop2]}}
  - {{name: loop2, provider: openai, model: priced}}
embedders:
  - {{name: embedder, provider: openai, model: priced}}
pricing:
  "openai/priced": {{input: 1000, output: 1000}}
budgets:
  default: {{tokens_per_month: 1000000}}
  users:
    spender: {{usd_per_day: 0.02}}
    chatty: {{tokens_per_hour: 20}}
"""


def config_text(fake: FakeUpstream) -> str:
    return CONFIG.format(url=getattr(fake, "base_url", fake.url))


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    gateway = GatewayServer(
        tmp_path_factory.mktemp("keys"), config_text(upstreams["openai"])
    ).start()
    yield gateway
    gateway.stop()


def stored_history(server: GatewayServer, user: str) -> list[str]:
    """The user's stored messages, newest first, as the admin lists them."""
    history = httpx.get(
        f"{server.url}/admin/conversations", params={"user": user}, headers=JSON, timeout=10
    ).json()
    return [row["content"] for row in history["data"]]


def sdk(server: GatewayServer, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)


def say(client: openai.OpenAI, model: str = "assistant", **options: Any) -> Any:
    return client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "x"}], **options
    )


def test_a_minted_key_calls_as_its_user_and_is_shown_only_once(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    created = mint(server)
    assert created["key"].startswith("sk-gw-") and len(created["key"]) > 40
    assert created["prefix"] == created["key"][:12]

    fakes["openai"].script(Reply.of_text("Hello, key holder."))
    answer = say(sdk(server, created["key"]))

    assert answer.choices[0].message.content == "Hello, key holder."
    listed = httpx.get(f"{server.url}/admin/keys", headers=JSON, timeout=10)
    assert created["key"] not in listed.text
    shown = httpx.get(f"{server.url}/admin/keys/{created['id']}", headers=JSON, timeout=10).json()
    assert "key" not in shown and shown["user"] == created["user"]
    assert shown["spent_usd"] == pytest.approx(0.018)  # the fake's 11 + 7 tokens
    assert shown["last_used_at"] is not None
    assert stored_history(server, created["user"]) == ["Hello, key holder.", "x"]


def test_requests_without_a_valid_key_are_refused(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    for key in ("sk-gw-madeup0000000000000000000000000000000000", "not-a-key"):
        with pytest.raises(openai.AuthenticationError) as refused:
            say(sdk(server, key))
        assert refused.value.code == "invalid_api_key"
    assert fakes["openai"].requests == []


def test_the_anthropic_sdk_sends_its_key_as_x_api_key(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    created = mint(server)
    fakes["openai"].script(Reply.of_text("Hello over Messages."))

    client = anthropic.Anthropic(base_url=server.url, api_key=created["key"], max_retries=0)
    message = client.messages.create(
        model="assistant",
        max_tokens=50,
        messages=[{"role": "user", "content": "x"}],
        metadata={"user_id": '{"device_id": "d1", "session_id": "s1"}'},  # as Claude Code
    )

    assert message.content[0].type == "text" and message.content[0].text == "Hello over Messages."
    refused_client = anthropic.Anthropic(
        base_url=server.url, api_key="sk-gw-madeup0000000000000000000000000000000000", max_retries=0
    )
    with pytest.raises(anthropic.AuthenticationError) as refused:
        refused_client.messages.create(
            model="assistant", max_tokens=50, messages=[{"role": "user", "content": "x"}]
        )
    assert refused.value.body == {
        "type": "error",
        "error": {
            "type": "authentication_error",
            "message": "The API key is not valid (unknown, revoked or expired)",
        },
    }
    assert len(fakes["openai"].requests) == 1
    assert stored_history(server, created["user"]) == ["Hello over Messages.", "x"]


def test_a_key_that_is_not_the_gateways_is_refused_naming_where_it_was_read(
    server: GatewayServer,
) -> None:
    """An Anthropic key left in ``ANTHROPIC_API_KEY`` reaches the gateway as ``x-api-key``
    (Claude Code sends it there)."""
    refused = generate(server, "messages", "sk-ant-api03-own")
    assert refused.status_code == 401, refused.text
    message = refused.json()["error"]["message"]
    assert "the x-api-key header" in message and "not a gateway key (sk-gw-…)" in message

    options = genai_types.HttpOptions(base_url=server.url, api_version="v1beta")
    gemini = genai.Client(api_key="AIza-own-google-key", http_options=options)
    with pytest.raises(genai_errors.ClientError) as by_google_key:
        gemini.models.generate_content(model="assistant", contents="Hi")
    assert "the x-goog-api-key header" in str(by_google_key.value.message)


def test_a_revoked_key_is_refused_within_a_second(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    created = mint(server)
    client = sdk(server, created["key"])
    say(client)

    revoked = httpx.delete(f"{server.url}/admin/keys/{created['id']}", timeout=10)
    assert revoked.status_code == 200 and revoked.json()["revoked_at"] is not None
    time.sleep(1.05)

    with pytest.raises(openai.AuthenticationError):
        say(client)


def test_a_key_acts_for_its_own_user_only(server: GatewayServer) -> None:
    created = mint(server)

    with pytest.raises(openai.PermissionDeniedError) as refused:
        say(sdk(server, created["key"]), safety_identifier="someone-else")

    assert refused.value.code == "permission_denied"


def test_a_key_limited_to_agents_sees_and_calls_only_those(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    created = mint(server, agents=["assistant"])
    client = sdk(server, created["key"])

    assert [model.id for model in client.models.list()] == ["assistant"]
    with pytest.raises(openai.PermissionDeniedError) as refused:
        say(client, model="other")
    assert refused.value.code == "model_not_allowed"
    with pytest.raises(openai.PermissionDeniedError):
        client.embeddings.create(model="embedder", input="x")
    assert fakes["openai"].requests == []


def test_a_key_limited_to_agents_neither_finds_nor_counts_the_others(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    created = mint(server, agents=["assistant"])
    client = sdk(server, created["key"])
    claude = anthropic.Anthropic(base_url=server.url, api_key=created["key"], max_retries=0)

    assert client.models.retrieve("assistant").id == "assistant"
    with pytest.raises(openai.NotFoundError):
        client.models.retrieve("other")
    counted = claude.messages.count_tokens(
        model="assistant", messages=[{"role": "user", "content": "Hello"}]
    )
    assert counted.input_tokens > 0
    with pytest.raises(anthropic.NotFoundError):
        claude.messages.count_tokens(model="other", messages=[{"role": "user", "content": "Hello"}])
    assert fakes["openai"].requests == []


def test_a_spent_key_is_refused_before_its_tool_list_is_read(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    """Budgets and limits come before the tools' schemas: one of them is broken, and the
    refusal is the budget's."""
    created = mint(server, budget_usd=0)
    schema = {"type": "object", "properties": {"x": {"type": "string"}}}
    tools = [
        {"type": "function", "function": {"name": f"tool_{index}", "parameters": schema}}
        for index in range(500)
    ]
    tools[-1]["function"]["parameters"] = {"type": "object", "properties": {"x": {"type": 3}}}

    with pytest.raises(openai.RateLimitError) as refused:
        say(sdk(server, created["key"]), tools=tools)

    assert refused.value.code == "insufficient_quota"
    assert fakes["openai"].requests == []


@pytest.fixture
def looping(fakes: dict[str, FakeUpstream]) -> FakeUpstream:
    """Each model of the loop agents calls its subagent every time it is asked (18 tokens,
    $0.018, a call)."""
    fake = fakes["openai"]
    for level in (1, 2):

        def offers(recorded: Recorded, tool: str = f"loop{level}") -> bool:
            tools = recorded.body.get("tools") or []
            return any(offered["function"]["name"] == tool for offered in tools)

        fake.answer_when(offers, Reply.of_tool_calls((f"loop{level}", {"message": "again"})))
    return fake


@pytest.mark.parametrize(
    ("limits", "code", "calls"),
    [
        ({"budget_usd": 0.01}, "insufficient_quota", 1),  # spent $0.018 after the first
        ({"tpm": 40}, "rate_limit_exceeded", 3),  # 54 tokens after the third
    ],
)
def test_a_keys_limits_hold_for_every_model_call_of_a_turn(
    server: GatewayServer,
    looping: FakeUpstream,
    limits: dict[str, Any],
    code: str,
    calls: int,
) -> None:
    created = mint(server, **limits)

    with pytest.raises(openai.RateLimitError) as refused:
        say(sdk(server, created["key"]), model="loop0")

    assert refused.value.code == code
    assert len(looping.requests) == calls


def test_embeddings_are_paid_by_the_key_and_refused_once_its_budget_is_spent(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    created = mint(server, budget_usd=0.005)
    client = sdk(server, created["key"])
    words = " ".join(["word"] * 6)  # the fake counts one token a word: 0.006 USD

    client.embeddings.create(model="embedder", input=words)
    shown = httpx.get(f"{server.url}/admin/keys/{created['id']}", headers=JSON, timeout=10)
    assert shown.json()["spent_usd"] == pytest.approx(0.006)
    with pytest.raises(openai.RateLimitError) as refused:
        client.embeddings.create(model="embedder", input=words)

    assert refused.value.code == "insufficient_quota"
    assert len(fakes["openai"].requests) == 1


def test_a_spent_budget_refuses_before_any_upstream_call(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    created = mint(server, budget_usd=0.03)
    client = sdk(server, created["key"])
    say(client)
    say(client)  # 0.018 spent, under the budget: served, and 0.036 spent

    with pytest.raises(openai.RateLimitError) as refused:
        say(client)

    assert refused.value.code == "insufficient_quota"
    assert refused.value.type == "insufficient_quota"
    assert len(fakes["openai"].requests) == 2


def test_requests_per_minute_are_limited_with_retry_after(server: GatewayServer) -> None:
    created = mint(server, rpm=2)
    client = sdk(server, created["key"])
    say(client)
    say(client)

    with pytest.raises(openai.RateLimitError) as refused:
        say(client)

    assert refused.value.code == "rate_limit_exceeded"
    wait = int(refused.value.response.headers["retry-after"])
    assert 1 <= wait <= 60
    assert "x-should-retry" not in refused.value.response.headers  # it frees within a minute


# One generation request of each dialect, for the agent ``assistant`` (or ``model``).
GENERATIONS: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": ("/v1/chat/completions", {"messages": [{"role": "user", "content": "x"}]}),
    "responses": ("/v1/responses", {"input": "x"}),
    "messages": (
        "/v1/messages",
        {"max_tokens": 16, "messages": [{"role": "user", "content": "x"}]},
    ),
    "gemini": (
        "/v1beta/models/{model}:generateContent",
        {"contents": [{"parts": [{"text": "x"}]}]},
    ),
    "gemini-stream": (
        "/v1beta/models/{model}:streamGenerateContent?alt=sse",
        {"contents": [{"parts": [{"text": "x"}]}]},
    ),
}


def generate(
    server: GatewayServer, dialect: str, key: str, model: str = "assistant"
) -> httpx.Response:
    """One generation request of ``dialect`` with ``key``, each in its own header."""
    path, body = GENERATIONS[dialect]
    if dialect.startswith("gemini"):
        path, headers = path.format(model=model), {"x-goog-api-key": key}
    else:
        body, headers = {**body, "model": model}, {"Authorization": f"Bearer {key}"}
    if dialect == "messages":
        headers = {"x-api-key": key, "anthropic-version": "2023-06-01"}
    return httpx.post(f"{server.url}{path}", json=body, headers=headers, timeout=30)


def retry_delay(refused: httpx.Response) -> str:
    """The delay of the Google ``RetryInfo`` detail of a Gemini error."""
    (detail,) = refused.json()["error"]["details"]
    assert detail["@type"] == "type.googleapis.com/google.rpc.RetryInfo"
    delay: str = detail["retryDelay"]
    return delay


def test_a_spent_total_budget_is_final_on_every_dialect(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    """Nothing frees a ``total`` budget: no ``Retry-After``; Gemini's ``RetryInfo`` asks
    for a day, longer than Gemini CLI waits, so it stops at once."""
    key = mint(server, budget_usd=0)["key"]

    for dialect in GENERATIONS:
        refused = generate(server, dialect, key)
        assert refused.status_code == 429, (dialect, refused.text)
        assert refused.headers["x-should-retry"] == "false", dialect
        assert "retry-after" not in refused.headers, dialect
        assert "budget is spent" in refused.text, dialect
    assert retry_delay(generate(server, "gemini", key)) == "86400s"
    assert fakes["openai"].requests == []


def test_a_spent_rolling_budget_is_final_and_says_when_it_frees(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    key = mint(server, budget_usd=0.01, budget_window="day")["key"]
    say(sdk(server, key))  # $0.018: over the budget until it leaves the day

    for dialect in GENERATIONS:
        refused = generate(server, dialect, key)
        assert refused.status_code == 429, (dialect, refused.text)
        assert refused.headers["x-should-retry"] == "false", dialect
        wait = int(refused.headers["retry-after"])
        assert 86400 - 120 <= wait <= 86400, dialect
        if dialect == "gemini":
            assert retry_delay(refused) == f"{wait}s"
    assert len(fakes["openai"].requests) == 1


def test_a_key_limited_to_agents_is_refused_another_in_every_dialects_shape(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    """403, as on chat, wherever the key asks another agent for a reply; only lookups
    and token counts answer as for an unknown model (404)."""
    key = mint(server, agents=["assistant"])["key"]
    # Where each dialect's error says why, and what it says.
    expected = {
        "chat": (("error", "code"), "model_not_allowed"),
        "responses": (("error", "code"), "model_not_allowed"),
        "messages": (("error", "type"), "permission_error"),
        "gemini": (("error", "status"), "PERMISSION_DENIED"),
    }

    for dialect, ((outer, inner), reason) in expected.items():
        refused = generate(server, dialect, key, model="other")
        assert refused.status_code == 403, (dialect, refused.text)
        assert refused.json()[outer][inner] == reason
        assert refused.headers["x-should-retry"] == "false"
    streamed = generate(server, "gemini-stream", key, model="other")
    assert streamed.status_code == 403, streamed.text
    options = genai_types.HttpOptions(base_url=server.url, api_version="v1beta")
    gemini = genai.Client(api_key=key, http_options=options)
    with pytest.raises(genai_errors.ClientError) as refused_by_sdk:
        gemini.models.generate_content(model="other", contents="Hi")
    assert refused_by_sdk.value.code == 403
    with pytest.raises(genai_errors.ClientError) as counted:
        gemini.models.count_tokens(model="other", contents="Hi")
    assert counted.value.code == 404
    assert fakes["openai"].requests == []


BUDGET = 0.1
# Each call: 1 prompt token and 7 completion tokens at $1000 per million, as estimated
# before it (a one-character message, max_tokens 7), so an estimate is the real cost.
CALL = 0.008


def flood(urls: list[str], key: str) -> list[float]:
    def one(index: int) -> float:
        response = httpx.post(
            f"{urls[index % len(urls)]}/v1/chat/completions",
            headers={"Authorization": f"Bearer {key}"},
            json={
                "model": "assistant",
                "messages": [{"role": "user", "content": "x"}],
                "max_tokens": 7,
            },
            timeout=60,
        )
        if response.status_code == 429:
            assert response.json()["error"]["code"] == "insufficient_quota", response.text
            return 0.0
        assert response.status_code == 200, response.text
        return float(response.json()["usage"]["cost"])

    with ThreadPoolExecutor(max_workers=50) as pool:
        return list(pool.map(one, range(50)))


def assert_within_one_call_of_the_budget(spent: list[float]) -> None:
    served = [cost for cost in spent if cost]
    assert served and len(served) < len(spent)
    assert all(cost == pytest.approx(CALL) for cost in served)
    assert sum(served) <= BUDGET + CALL + 1e-9, (len(served), sum(served))


def slow_cheap_replies(fake: FakeUpstream) -> None:
    fake.answer_when(
        lambda recorded: True,
        Reply.of_text("ok", prompt_tokens=1, completion_tokens=7, delay=0.2),
    )


def test_fifty_concurrent_requests_overshoot_a_budget_by_at_most_one_request(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    slow_cheap_replies(fakes["openai"])
    created = mint(server, budget_usd=BUDGET)

    assert_within_one_call_of_the_budget(flood([server.url], created["key"]))


@pytest.mark.slow
def test_two_processes_on_postgresql_share_a_keys_budget(
    tmp_path: Path, fakes: dict[str, FakeUpstream], postgres_url: str
) -> None:
    slow_cheap_replies(fakes["openai"])
    first = GatewayServer(tmp_path, config_text(fakes["openai"]), database_url=postgres_url).start()
    second = GatewayServer(tmp_path, None, database_url=postgres_url).start()
    try:
        created = mint(first, budget_usd=BUDGET)
        assert_within_one_call_of_the_budget(flood([first.url, second.url], created["key"]))
    finally:
        first.stop()
        second.stop()


def manage(server: GatewayServer, *arguments: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(PROJECT_DIR / "manage.py"), *arguments],
        capture_output=True,
        text=True,
        check=False,
        env=server.env,
        timeout=60,
    )


def test_management_commands_create_list_and_revoke_keys(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    created = manage(server, "create_api_key", "--user", "cli-user", "--name", "ci", "--rpm", "5")
    assert created.returncode == 0, created.stderr
    key = created.stdout.strip()
    assert key.startswith("sk-gw-") and "\n" not in key

    assert say(sdk(server, key)).choices[0].message.content

    listed = manage(server, "list_api_keys")
    line = next(line for line in listed.stdout.splitlines() if key[:12] in line)
    assert key not in listed.stdout
    key_id, _, name, user, state, _ = line.split("\t")
    assert (name, user, state) == ("ci", "cli-user", "active")

    revoked = manage(server, "revoke_api_key", key_id)
    assert revoked.returncode == 0, revoked.stderr
    wait_for(lambda: _refused(server, key), "the revoked key to be refused")
    assert manage(server, "revoke_api_key", "999999").returncode == 1
    bad = manage(server, "create_api_key", "--user", "u", "--name", "n", "--rpm", "0")
    assert bad.returncode == 2 and not bad.stdout


def _refused(server: GatewayServer, key: str) -> bool:
    try:
        say(sdk(server, key))
    except openai.AuthenticationError:
        return True
    return False


@pytest.mark.parametrize(
    ("fields", "field"),
    [
        ({"rpm": 0}, "rpm"),
        ({"user": "ada\u0000lovelace"}, "user"),
        ({"user": "ada\nlovelace"}, "user"),
        ({"expires_at": "2020-01-01T00:00:00Z"}, "expires_at"),
    ],
)
def test_an_invalid_key_request_is_422_and_mints_nothing(
    server: GatewayServer, fields: dict[str, Any], field: str
) -> None:
    before = httpx.get(f"{server.url}/admin/keys", headers=JSON, timeout=10).json()["data"]
    response = httpx.post(
        f"{server.url}/admin/keys", json={"name": "x", "user": "u", **fields}, timeout=10
    )
    assert response.status_code == 422
    assert field in response.text
    assert httpx.get(f"{server.url}/admin/keys", headers=JSON, timeout=10).json()["data"] == before


@pytest.fixture
def page() -> Iterator[Page]:
    with chromium_page() as page:
        yield page


def test_the_keys_page_mints_a_key_shows_it_once_and_revokes_it(
    page: Page, server: GatewayServer
) -> None:
    page.goto(f"{server.url}/admin/")
    page.get_by_role("navigation").get_by_role("link", name="API keys").click()
    page.get_by_label("Name", exact=True).fill("browser key")
    page.get_by_label("User", exact=True).fill("browser-user")
    page.get_by_label("Budget in USD").fill("2.5")
    page.get_by_role("button", name="Create key").click()

    shown = page.locator("#new-key")
    expect(shown).to_have_text(re.compile(r"^sk-gw-\w{40,}$"))
    key = shown.inner_text()
    expect(page.get_by_role("button", name="Copy")).to_be_visible()
    shot(page, "key-created")
    assert say(sdk(server, key)).choices[0].message.content

    page.goto(f"{server.url}/admin/keys")
    assert key not in page.content()
    row = page.get_by_role("row").filter(has_text="browser key")
    expect(row).to_contain_text("$2.5 / total")
    page.once("dialog", lambda dialog: dialog.accept())
    row.get_by_role("button", name="Revoke").click()
    expect(page.get_by_role("row").filter(has_text="browser key")).to_contain_text("revoked")
    shot(page, "key-revoked")
    wait_for(lambda: _refused(server, key), "the revoked key to be refused")


@pytest.mark.parametrize(
    ("user", "code", "param"),
    [
        ("spender", "insufficient_quota", "budgets.users.spender.usd_per_day"),
        ("chatty", "rate_limit_exceeded", "budgets.users.chatty.tokens_per_hour"),
    ],
)
def test_the_operators_budgets_refuse_a_user_over_them(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user: str, code: str, param: str
) -> None:
    client = sdk(server, mint(server, user=user)["key"])
    say(client)
    say(client)  # 18 tokens, $0.018 before it: under both caps

    with pytest.raises(openai.RateLimitError) as refused:
        say(client)

    assert (refused.value.code, refused.value.body["param"]) == (code, param)
    assert int(refused.value.response.headers["retry-after"]) >= 1
    assert refused.value.response.headers["x-should-retry"] == "false"
    assert len(fakes["openai"].requests) == 2
    assert server.metric("gateway_quota_refusals_total", reason=code) >= 1


def test_spend_is_grouped_by_key_user_agent_model_and_day(server: GatewayServer) -> None:
    created = mint(server)
    client = sdk(server, created["key"])
    say(client)
    say(client, model="other")

    def grouped(group_by: str) -> dict[Any, dict[str, Any]]:
        response = httpx.get(
            f"{server.url}/admin/spend", params={"group_by": group_by}, headers=JSON, timeout=10
        )
        assert response.status_code == 200, response.text
        return {row["group"]: row for row in response.json()["data"]}

    mine = grouped("key")[created["id"]]
    assert (mine["requests"], mine["input_tokens"], mine["output_tokens"]) == (2, 22, 14)
    assert mine["cost_usd"] == pytest.approx(0.036)
    assert grouped("user")[created["user"]]["cost_usd"] == pytest.approx(0.036)
    assert {"assistant", "other"} <= set(grouped("agent"))
    assert grouped("model")["priced"]["requests"] >= 2
    today = time.strftime("%Y-%m-%d", time.gmtime())
    assert grouped("day")[today]["cost_usd"] >= 0.036
    future = httpx.get(
        f"{server.url}/admin/spend",
        params={"since": "2999-01-01T00:00:00Z"},
        headers=JSON,
        timeout=10,
    )
    assert future.json() == {"data": [], "next": None}


def test_the_spend_page_charts_spend_per_day_by_agent(page: Page, server: GatewayServer) -> None:
    created = mint(server, name="charted")
    say(sdk(server, created["key"]))

    page.goto(f"{server.url}/admin/")
    page.get_by_role("navigation").get_by_role("link", name="Spend").click()

    chart = page.get_by_role("img", name=re.compile("Spend per day by agent"))
    expect(chart).to_be_visible()
    assert chart.locator("rect.bar").count() >= 1
    expect(page.locator(".legend")).to_contain_text("assistant")
    expect(page.get_by_role("link", name=f"key {created['id']}")).to_be_visible()
    expect(page.get_by_role("link", name=created["user"])).to_be_visible()
    shot(page, "spend")


def test_the_gemini_api_takes_a_key_as_x_goog_api_key_or_key_parameter(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    created = mint(server)
    options = genai_types.HttpOptions(base_url=server.url, api_version="v1beta")
    client = genai.Client(api_key=created["key"], http_options=options)  # x-goog-api-key
    fakes["openai"].script(Reply.of_text("Keyed."), Reply.of_text("By parameter."))

    assert client.models.generate_content(model="assistant", contents="Hi").text == "Keyed."
    body = {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}
    by_parameter = httpx.post(
        f"{server.url}/v1beta/models/assistant:generateContent",
        params={"key": created["key"]},
        json=body,
        timeout=30,
    )
    assert by_parameter.status_code == 200, by_parameter.text
    assert stored_history(server, created["user"])[0] == "By parameter."
    refused = httpx.post(
        f"{server.url}/v1beta/models/assistant:generateContent",
        headers={"x-goog-api-key": "sk-gw-madeup0000000000000000000000000000000000"},
        json=body,
        timeout=30,
    )
    assert refused.status_code == 401
    assert refused.json()["error"]["status"] == "UNAUTHENTICATED"
    assert refused.headers["x-should-retry"] == "false"


def test_a_tool_round_is_no_extra_attempt_and_a_refused_request_keeps_its_model(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    """The request's record counts attempts as ``X-Gateway-Attempts`` does: a tool round
    is a call of its own; a request the key's budget refused names the model asked."""
    fakes["openai"].script(
        Reply.of_tool_calls(("loop1", {"message": "Ask below."})),
        Reply.of_text("From below."),
        Reply.of_text("Done."),
    )
    user = mint(server)
    answered = generate(server, "chat", user["key"], model="loop0")
    assert answered.status_code == 200, answered.text
    assert len(fakes["openai"].requests) == 3
    spent = mint(server, budget_usd=0)
    refused = generate(server, "chat", spent["key"])
    assert refused.status_code == 429

    def record(response: httpx.Response) -> dict[str, Any]:
        url = f"{server.url}/admin/requests/{response.headers['X-Request-Id']}"

        def kept() -> dict[str, Any] | None:
            found = httpx.get(url, headers=JSON, timeout=10)
            return found.json() if found.status_code == 200 else None

        found: dict[str, Any] = wait_for(kept, "the request's record")
        return found

    assert record(answered)["attempts"] == int(answered.headers["X-Gateway-Attempts"]) == 1
    kept = record(refused)
    assert (kept["model"], kept["status"], kept["attempts"]) == ("assistant", 429, 0)


def outside(element: Any, container: Any) -> bool:
    """Whether ``element``'s box reaches past ``container``'s (left or right)."""
    inner, outer = element.bounding_box(), container.bounding_box()
    assert inner is not None and outer is not None
    return bool(
        inner["x"] < outer["x"] - 0.5
        or inner["x"] + inner["width"] > outer["x"] + outer["width"] + 0.5
    )


def test_the_admin_at_1400_px_groups_its_pages_and_clips_nothing(
    page: Page, server: GatewayServer
) -> None:
    """The display items real users found: the navigation in five named groups, spend
    axis labels whole, the requests filter inside its card, a refused request's model
    shown where its agent would be, live and in the list."""
    page.set_viewport_size({"width": 1400, "height": 900})
    say(sdk(server, mint(server, name="charted")["key"]))  # $0.018: axis labels of 6 characters
    page.goto(f"{server.url}/admin/live")
    expect(page.locator("#live-status")).to_contain_text("Connected")
    spent = mint(server, budget_usd=0)
    assert generate(server, "messages", spent["key"]).status_code == 429

    live_row = page.locator("#live-rows tr", has_text=spent["user"])
    expect(live_row.locator("td").nth(1)).to_have_text("assistant")
    navigation = page.get_by_role("navigation", name="Admin pages")
    groups = {
        "Config": ["Agents", "Providers", "Config file", "Revisions"],
        "Traffic": ["Live", "Requests", "Conversations"],
        "Money": ["Usage", "Spend", "Reconciliation"],
        "Automation": ["Triggers", "Smoke tests", "Evaluations"],
        "Access": ["API keys", "MCP connections"],
    }
    for group, pages in groups.items():
        for name in pages:
            expect(
                navigation.get_by_role("group", name=group).get_by_role("link", name=name)
            ).to_be_visible()
    shot(page, "navigation-groups")

    navigation.get_by_role("link", name="Spend").click()
    ticks = page.locator("svg[role=img] text.tick")
    expect(ticks.first).to_be_visible()
    svg = page.locator("svg[role=img]").first
    assert not any(outside(ticks.nth(index), svg) for index in range(ticks.count()))
    shot(page, "spend-axis")

    page.goto(f"{server.url}/admin/requests?user={spent['user']}")
    fields = page.locator("form.search > *")
    main = page.locator("main")
    assert not any(outside(fields.nth(index), main) for index in range(fields.count()))
    row = page.get_by_role("row").filter(has_text=spent["user"])
    expect(row.locator("td").nth(3)).to_have_text("assistant")
    shot(page, "requests-filter")
