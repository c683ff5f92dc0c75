"""Native mode through the real server with the official SDKs: the lines of agents on a
provider with ``batch: native`` go upstream as one provider batch (OpenAI's Files and
Batch APIs, Anthropic's Message Batches, as the fakes implement them), admitted line by
line under the key that created the batch, billed at half the standard rate."""

import json
import sqlite3
from collections.abc import Iterator
from typing import Any

import anthropic
import pytest

from tests.e2e.test_batches import chat_line, ended, read_file, sdk, submit
from tests.fakes.anthropic_upstream import AnthropicUpstream
from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.fakes.batches import BatchStore
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.keys import mint
from tests.polling import wait_for
from tests.server import GatewayServer

# One token costs exactly 1000 micro-USD at the standard rate: a default reply (11 + 7
# tokens) costs 18,000 micro-USD live, 9,000 in a provider batch.
CONFIG = """\
auth: {{proxy: {{api_keys: true}}}}
providers:
  openai: {{api_key: sk-upstream, base_url: '{openai}', retries: {{attempts: 0}}, batch: native}}
  anthropic: {{api_key: sk-ant, base_url: '{anthropic}', retries: {{attempts: 0}}, batch: native}}
agents:
  - {{name: assistant, provider: openai, model: priced}}
  - {{name: other, provider: openai, model: priced}}
  - {{name: planner, provider: openai, model: priced, subagents: [assistant]}}
  - {{name: claude, provider: anthropic, model: priced}}
pricing:
  "openai/priced": {{input: 1000, output: 1000}}
  "anthropic/priced": {{input: 1000, output: 1000}}
files: {{dir: uploads}}
batches: {{concurrency: 2, poll_seconds: 0.2}}
"""


def config_text(upstreams: dict[str, FakeUpstream]) -> str:
    openai_fake = upstreams["openai"]
    assert isinstance(openai_fake, OpenAIUpstream)
    return CONFIG.format(openai=openai_fake.base_url, anthropic=upstreams["anthropic"].url)


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    gateway = GatewayServer(tmp_path_factory.mktemp("native"), config_text(upstreams)).start()
    yield gateway
    gateway.stop()


def store(fake: FakeUpstream) -> BatchStore:
    assert isinstance(fake, OpenAIUpstream | AnthropicUpstream)
    return fake.provider_batches


def calls(fake: FakeUpstream, method: str, path: str) -> list[Recorded]:
    return [r for r in fake.requests if r.method == method and r.path.startswith(path)]


def chats(fake: FakeUpstream) -> list[Recorded]:
    return calls(fake, "POST", "/v1/chat/completions")


def ledger(server: GatewayServer, user: str) -> list[tuple[str, str, int]]:
    with sqlite3.connect(server.workdir / "gateway.sqlite3") as database:
        rows = database.execute(
            "SELECT kind, agent, cost_micro_usd FROM inference_ledgerentry WHERE user_id = ? "
            "ORDER BY agent, id",
            (user,),
        ).fetchall()
    return [tuple(row) for row in rows]


def test_native_lines_go_upstream_as_one_provider_batch_at_half_price(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    """Four lines of ``assistant`` go as one OpenAI batch, polled until it completed (one
    of them refused by the provider: the error file); the line of ``planner`` (a
    gateway-run subagent tool) is sent through the gateway, at the standard rate."""
    fake = fakes["openai"]
    store(fake).polls = 2
    fake.answer_when(
        lambda line: line.path == "/v1/chat/completions" and "refuse me" in json.dumps(line.body),
        Reply.of_error(400, "That request is not allowed"),
    )
    key = mint(server)
    client = sdk(server, key["key"])
    lines = [chat_line(f"req-{n}", f"question {n}") for n in range(1, 4)]
    others = [chat_line("plan", "a plan", "planner"), chat_line("bad", "refuse me")]

    done = ended(client, submit(client, [*lines, *others]).id)

    assert done.status == "completed"
    [provider_batch] = store(fake).batches.values()
    assert [custom_id for custom_id, _ in provider_batch.requests] == [
        "line-1",
        "line-2",
        "line-3",
        "line-5",
    ]
    assert [body["model"] for _, body in provider_batch.requests] == ["priced"] * 4
    assert [body["messages"][-1]["content"] for _, body in provider_batch.requests] == [
        "question 1",
        "question 2",
        "question 3",
        "refuse me",
    ]
    [refused] = read_file(client, done.error_file_id)
    assert refused["custom_id"] == "bad" and refused["response"]["status_code"] == 400
    assert "That request is not allowed" in refused["error"]["message"]
    assert len(calls(fake, "POST", "/v1/files")) == 1
    assert len(calls(fake, "POST", "/v1/batches")) == 1
    assert len(calls(fake, "GET", "/v1/batches/")) == 3  # in progress twice, then completed
    assert [said["messages"][-1]["content"] for said in (r.body for r in chats(fake))] == ["a plan"]
    output = {line["custom_id"]: line for line in read_file(client, done.output_file_id)}
    assert sorted(output) == ["plan", "req-1", "req-2", "req-3"]
    for number in (1, 2, 3):
        line = output[f"req-{number}"]
        assert line["error"] is None and line["response"]["status_code"] == 200
        body = line["response"]["body"]
        assert body["object"] == "chat.completion" and body["model"] == "assistant"
        message = body["choices"][0]["message"]
        assert (message["role"], message["content"]) == (
            "assistant",
            f"You said: question {number}",
        )
        assert body["usage"]["total_tokens"] == 18
    assert sorted(ledger(server, key["user"])) == [
        ("batch", "assistant", 0),  # the line the provider refused
        ("batch", "assistant", 9000),
        ("batch", "assistant", 9000),
        ("batch", "assistant", 9000),
        ("batch", "planner", 18000),
    ]


def test_each_native_line_is_admitted_under_the_keys_agents_and_budget(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    """A line for an agent the key may not use fails alone; the budget's reservations
    admit some lines and refuse the rest before the provider batch is sent: only the
    admitted ones are in it."""
    fake = fakes["openai"]
    key = mint(server, agents=["assistant"], budget_usd=0.05)
    client = sdk(server, key["key"])
    lines = [chat_line(f"r{n}", f"q{n}", max_tokens=20) for n in range(6)]

    done = ended(client, submit(client, [chat_line("no", "hello", "other"), *lines]).id)

    [provider_batch] = store(fake).batches.values()
    sent = len(provider_batch.requests)
    assert done.request_counts is not None
    assert 1 <= sent < 6 and done.request_counts.completed == sent
    errors = {
        line["custom_id"]: line["error"]["code"] for line in read_file(client, done.error_file_id)
    }
    assert errors.pop("no") == "model_not_allowed"
    assert set(errors.values()) == {"insufficient_quota"} and len(errors) == 6 - sent
    assert chats(fake) == []  # nothing went upstream outside the provider batch


def test_cancel_reaches_the_provider_batch(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes["openai"]
    store(fake).polls = 10_000
    client = sdk(server, mint(server)["key"])
    batch = submit(client, [chat_line(f"r{n}", f"q{n}") for n in range(3)])
    wait_for(lambda: calls(fake, "GET", "/v1/batches/"), "the provider batch polled")

    assert client.batches.cancel(batch.id).status == "cancelling"

    done = ended(client, batch.id)
    [provider_batch] = store(fake).batches.values()
    assert [r.path for r in calls(fake, "POST", "/v1/batches/")] == [
        f"/v1/batches/{provider_batch.id}/cancel"
    ]
    assert done.status == "cancelled" and done.output_file_id is None
    errors = read_file(client, done.error_file_id)
    assert sorted(line["custom_id"] for line in errors) == ["r0", "r1", "r2"]
    assert {line["error"]["code"] for line in errors} == {"batch_cancelled"}


def test_a_restart_mid_poll_polls_the_same_provider_batch(
    tmp_path_factory: pytest.TempPathFactory, fakes: dict[str, FakeUpstream]
) -> None:
    """The gateway is killed while it polls: the process started after it polls the
    provider batch it had sent, never sends another, and delivers every line."""
    fake = fakes["openai"]
    store(fake).polls = 10_000
    gateway = GatewayServer(
        tmp_path_factory.mktemp("native-restart"),
        config_text(fakes),
        extra_env={"GATEWAY_LEASE_SECONDS": "2"},
    ).start()
    try:
        key = mint(gateway)
        client = sdk(gateway, key["key"])
        batch = submit(client, [chat_line(f"r{n}", f"q{n}") for n in range(3)])
        wait_for(lambda: calls(fake, "GET", "/v1/batches/"), "the provider batch polled")
        gateway.kill()
        [provider_batch] = store(fake).batches.values()
        provider_batch.polls_left = 1  # it completes while the gateway is away
        gateway.start()
        client = sdk(gateway, client.api_key)

        done = ended(client, batch.id)
        output = read_file(client, done.output_file_id)
        costs = ledger(gateway, key["user"])
    finally:
        gateway.stop()

    assert len(store(fake).batches) == 1 and len(calls(fake, "POST", "/v1/batches")) == 1
    assert done.status == "completed" and done.error_file_id is None
    assert sorted(line["custom_id"] for line in output) == ["r0", "r1", "r2"]
    texts = {line["response"]["body"]["choices"][0]["message"]["content"] for line in output}
    assert texts == {"You said: q0", "You said: q1", "You said: q2"}
    assert costs == [("batch", "assistant", 9000)] * 3


def test_a_message_batch_goes_to_anthropic_as_one_message_batch(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes["anthropic"]
    store(fake).polls = 1
    key = mint(server)
    client = anthropic.Anthropic(base_url=server.url, api_key=key["key"], max_retries=0)
    requests: list[Any] = [
        {
            "custom_id": f"m{n}",
            "params": {
                "model": "claude",
                "max_tokens": 64,
                "messages": [{"role": "user", "content": f"note {n}"}],
            },
        }
        for n in range(3)
    ]

    created = client.messages.batches.create(requests=requests)
    wait_for(
        lambda: client.messages.batches.retrieve(created.id).processing_status == "ended",
        "the message batch to end",
    )

    [provider_batch] = store(fake).batches.values()
    assert [body["messages"] for _, body in provider_batch.requests] == [
        [{"role": "user", "content": [{"type": "text", "text": f"note {n}"}]}] for n in range(3)
    ]
    assert [body["model"] for _, body in provider_batch.requests] == ["priced"] * 3
    assert calls(fake, "POST", "/v1/messages") == calls(fake, "POST", "/v1/messages/batches")
    results = {r.custom_id: r.result for r in client.messages.batches.results(created.id)}
    assert sorted(results) == ["m0", "m1", "m2"]
    for n in range(3):
        result = results[f"m{n}"]
        assert result.type == "succeeded"
        assert result.message.model == "claude"
        assert [block.text for block in result.message.content] == [f"You said: note {n}"]
    assert ledger(server, key["user"]) == [("batch", "claude", 9000)] * 3


def test_cancelling_a_message_batch_cancels_the_anthropic_batch(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes["anthropic"]
    store(fake).polls = 10_000
    client = anthropic.Anthropic(base_url=server.url, api_key=mint(server)["key"], max_retries=0)
    params = {"model": "claude", "max_tokens": 64, "messages": [{"role": "user", "content": "hi"}]}
    created = client.messages.batches.create(
        requests=[{"custom_id": f"m{n}", "params": params} for n in range(2)]  # type: ignore[typeddict-item]
    )
    wait_for(lambda: calls(fake, "GET", "/v1/messages/batches/"), "the message batch polled")

    assert client.messages.batches.cancel(created.id).processing_status == "canceling"

    done = wait_for(
        lambda: (
            (found := client.messages.batches.retrieve(created.id)).processing_status == "ended"
            and found
        ),
        "the cancelled batch to end",
    )
    [provider_batch] = store(fake).batches.values()
    assert [r.path for r in calls(fake, "POST", "/v1/messages/batches/")] == [
        f"/v1/messages/batches/{provider_batch.id}/cancel"
    ]
    assert (done.request_counts.canceled, done.request_counts.succeeded) == (2, 0)
    assert [r.result.type for r in client.messages.batches.results(created.id)] == ["canceled"] * 2
