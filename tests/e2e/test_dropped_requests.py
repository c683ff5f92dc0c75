"""A request whose client goes away before the answer is billed, logged and counted like
one that got it: its calls under way are billed at their estimate (the prompt's, and the
reply's ``max_tokens``), on every dialect, so a client timeout is no way around a key's
budget or ``rpm``, or a user's caps (docs/cost-and-keys.md, "A request the client
drops")."""

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest

from tests.fakes.base import FakeUpstream, Reply
from tests.polling import wait_for
from tests.server import GatewayServer

JSON = {"Accept": "application/json"}
# A token costs 1,000 micro-USD. Every request here says "x" (one token, estimated) and
# allows a reply of 4: a dropped one is billed 5 tokens, $0.005.
CONFIG = """\
auth: {{proxy: {{api_keys: true}}}}
providers:
  openai: {{api_key: sk-upstream, base_url: '{url}', retries: {{attempts: 0}}}}
agents:
  - {{name: slow, provider: openai, model: priced}}
embedders:
  - {{name: embedder, provider: openai, model: priced}}
pricing:
  "openai/priced": {{input: 1000, output: 1000}}
budgets:
  users:
    capped: {{tokens_per_hour: 12}}
"""
SLOW = 1.5  # seconds the upstream takes
CLIENT_TIMEOUT = 0.4  # seconds the clients wait
ESTIMATE_TOKENS = 5
ESTIMATE_USD = 0.005


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    fake = upstreams["openai"]
    url = getattr(fake, "base_url", fake.url)
    gateway = GatewayServer(tmp_path_factory.mktemp("dropped"), CONFIG.format(url=url)).start()
    yield gateway
    gateway.stop()


@pytest.fixture
def slow(fakes: dict[str, FakeUpstream]) -> FakeUpstream:
    """The upstream answers every call, embeddings included, after ``SLOW`` seconds."""
    fake = fakes["openai"]
    vector = {"object": "embedding", "index": 0, "embedding": [0.1, 0.2]}
    embeddings = {"object": "list", "data": [vector], "usage": {"prompt_tokens": 1}}
    fake.answer_when(fake.is_embedding, Reply(raw_body=embeddings, delay=SLOW))
    fake.answer_when(lambda recorded: True, Reply.of_text("late", delay=SLOW))
    return fake


def mint(server: GatewayServer, user: str, **limits: Any) -> dict[str, Any]:
    body = {"name": "dropped", "user": user, **limits}
    response = httpx.post(f"{server.url}/admin/keys", json=body, timeout=10)
    assert response.status_code == 201, response.text
    created: dict[str, Any] = response.json()
    return created


def spent(server: GatewayServer, key: dict[str, Any]) -> float:
    url = f"{server.url}/admin/keys/{key['id']}"
    amount: float = httpx.get(url, headers=JSON, timeout=10).json()["spent_usd"]
    return amount


def request_lines(server: GatewayServer, user: str) -> list[dict[str, Any]]:
    """The log lines of the user's requests."""
    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("event") == "request" and line["user"] == user]


def drop_one_of_each(server: GatewayServer, key: str) -> None:
    """A chat completion, a Messages call and a Responses call, each abandoned by its
    client while the upstream still works on it."""
    url = f"{server.url}/v1"
    openai_client = openai.OpenAI(base_url=url, api_key=key, max_retries=0, timeout=CLIENT_TIMEOUT)
    claude = anthropic.Anthropic(
        base_url=server.url, api_key=key, max_retries=0, timeout=CLIENT_TIMEOUT
    )
    with pytest.raises(openai.APITimeoutError):
        openai_client.chat.completions.create(
            model="slow", messages=[{"role": "user", "content": "x"}], max_tokens=4
        )
    with pytest.raises(anthropic.APITimeoutError):
        claude.messages.create(
            model="slow", messages=[{"role": "user", "content": "x"}], max_tokens=4
        )
    with pytest.raises(openai.APITimeoutError):
        openai_client.responses.create(model="slow", input="x", max_output_tokens=4)


def test_a_dropped_request_is_billed_at_its_estimate_and_spends_the_key_budget(
    server: GatewayServer, slow: FakeUpstream
) -> None:
    user = f"dropper-{uuid.uuid4().hex[:8]}"
    key = mint(server, user, budget_usd=3 * ESTIMATE_USD)

    drop_one_of_each(server, key["key"])

    wait_for(lambda: spent(server, key) >= 3 * ESTIMATE_USD - 1e-9, "the key's spend")
    assert spent(server, key) == pytest.approx(3 * ESTIMATE_USD)
    assert len(slow.requests) == 3  # each reached the provider, which bills us for it

    refused = openai.OpenAI(base_url=f"{server.url}/v1", api_key=key["key"], max_retries=0)
    with pytest.raises(openai.RateLimitError) as raised:
        refused.chat.completions.create(
            model="slow", messages=[{"role": "user", "content": "x"}], max_tokens=4
        )
    assert raised.value.code == "insufficient_quota"
    assert len(slow.requests) == 3


def test_a_dropped_request_is_logged_counted_and_recorded_with_status_499(
    server: GatewayServer, slow: FakeUpstream
) -> None:
    user = f"logged-{uuid.uuid4().hex[:8]}"
    key = mint(server, user)
    before = server.metric("gateway_requests_total", agent="slow", status="499")

    drop_one_of_each(server, key["key"])

    def records() -> list[dict[str, Any]]:
        page = httpx.get(
            f"{server.url}/admin/requests", params={"user": user}, headers=JSON, timeout=10
        ).json()
        rows: list[dict[str, Any]] = page["data"]
        return rows if len(rows) == 3 else []

    rows = wait_for(records, "the requests' records")
    assert {row["status"] for row in rows} == {499}
    assert {row["input_tokens"] + row["output_tokens"] for row in rows} == {ESTIMATE_TOKENS}
    assert server.metric("gateway_requests_total", agent="slow", status="499") == before + 3
    lines = request_lines(server, user)
    assert [line["status"] for line in lines] == [499, 499, 499]
    assert {line["path"] for line in lines} == {
        "/v1/chat/completions",
        "/v1/messages",
        "/v1/responses",
    }


def test_dropped_requests_count_for_the_keys_requests_per_minute(
    server: GatewayServer, slow: FakeUpstream
) -> None:
    key = mint(server, f"rpm-{uuid.uuid4().hex[:8]}", rpm=2)
    client = openai.OpenAI(
        base_url=f"{server.url}/v1", api_key=key["key"], max_retries=0, timeout=CLIENT_TIMEOUT
    )
    for _ in range(2):
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(
                model="slow", messages=[{"role": "user", "content": "x"}], max_tokens=4
            )
    wait_for(lambda: spent(server, key) >= 2 * ESTIMATE_USD - 1e-9, "the key's spend")

    with pytest.raises(openai.RateLimitError) as raised:
        client.with_options(timeout=10).chat.completions.create(
            model="slow", messages=[{"role": "user", "content": "x"}], max_tokens=4
        )
    assert raised.value.code == "rate_limit_exceeded"
    assert len(slow.requests) == 2


def test_dropped_requests_count_against_the_users_token_cap_and_usage(
    server: GatewayServer, slow: FakeUpstream
) -> None:
    key = mint(server, "capped")
    client = openai.OpenAI(
        base_url=f"{server.url}/v1", api_key=key["key"], max_retries=0, timeout=CLIENT_TIMEOUT
    )
    for _ in range(3):
        with pytest.raises(openai.APITimeoutError):
            client.chat.completions.create(
                model="slow", messages=[{"role": "user", "content": "x"}], max_tokens=4
            )
        time.sleep(SLOW)  # the reservation of one is settled before the next asks

    usage = httpx.get(
        f"{server.url}/admin/usage", params={"user": "capped"}, headers=JSON, timeout=10
    ).json()
    assert usage["windows"]["hour"] >= 2 * ESTIMATE_TOKENS
    with pytest.raises(openai.RateLimitError) as raised:
        client.with_options(timeout=10).chat.completions.create(
            model="slow", messages=[{"role": "user", "content": "x"}], max_tokens=4
        )
    assert raised.value.code == "rate_limit_exceeded"


def test_a_dropped_embeddings_request_is_billed_at_its_estimate(
    server: GatewayServer, slow: FakeUpstream
) -> None:
    key = mint(server, f"embedder-{uuid.uuid4().hex[:8]}")
    client = openai.OpenAI(
        base_url=f"{server.url}/v1", api_key=key["key"], max_retries=0, timeout=CLIENT_TIMEOUT
    )
    with pytest.raises(openai.APITimeoutError):
        client.embeddings.create(model="embedder", input="abcdefgh")  # two tokens, estimated

    assert wait_for(lambda: spent(server, key), "the key's spend") == pytest.approx(0.002)
