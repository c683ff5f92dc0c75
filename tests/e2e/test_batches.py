"""Batches through the real server with the official SDKs: OpenAI's Batch API
(``files.create(purpose="batch")``, ``batches.*``, ``files.content``) and Anthropic's
Message Batches (``messages.batches.*``), run as requests of the key that created them,
against the fake upstream."""

import json
import sqlite3
import threading
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import openai
import pytest
from playwright.sync_api import Page, expect

from tests.browser import chromium_page, shot
from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.keys import mint
from tests.polling import wait_for
from tests.server import GatewayServer

JSON = {"Accept": "application/json"}
# One token costs exactly 1000 micro-USD: a default reply (11 + 7 tokens) costs $0.018.
CONFIG = """\
auth: {{proxy: {{api_keys: true}}}}
providers:
  openai: {{api_key: sk-upstream, base_url: '{url}', retries: {{attempts: 0}}}}
agents:
  - {{name: assistant, provider: openai, model: priced}}
  - {{name: other, provider: openai, model: priced}}
embedders:
  - {{name: embedder, provider: openai, model: priced}}
pricing:
  "openai/priced": {{input: 1000, output: 1000}}
files: {{dir: uploads}}
batches: {{concurrency: 2, yield_above: 1}}
"""
DONE = ("completed", "failed", "cancelled", "expired")


def config_text(fake: FakeUpstream) -> str:
    return CONFIG.format(url=getattr(fake, "base_url", fake.url))


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    gateway = GatewayServer(
        tmp_path_factory.mktemp("batches"), config_text(upstreams["openai"])
    ).start()
    yield gateway
    gateway.stop()


def sdk(server: GatewayServer, key: str) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key=key, max_retries=0)


def chat_line(custom_id: str, text: str, model: str = "assistant", **body: Any) -> dict[str, Any]:
    return {
        "custom_id": custom_id,
        "method": "POST",
        "url": "/v1/chat/completions",
        "body": {"model": model, "messages": [{"role": "user", "content": text}], **body},
    }


def jsonl(lines: list[Any]) -> bytes:
    return "".join(
        (line if isinstance(line, str) else json.dumps(line)) + "\n" for line in lines
    ).encode()


def submit(client: openai.OpenAI, lines: list[Any], endpoint: str = "/v1/chat/completions") -> Any:
    upload = client.files.create(file=("input.jsonl", jsonl(lines)), purpose="batch")
    return client.batches.create(
        input_file_id=upload.id,
        endpoint=endpoint,
        completion_window="24h",
        metadata={"job": "nightly"},
    )


def ended(client: openai.OpenAI, batch_id: str) -> Any:
    return wait_for(
        lambda: (found := client.batches.retrieve(batch_id)).status in DONE and found,
        f"batch {batch_id} to end",
        seconds=60,
    )


def read_file(client: openai.OpenAI, file_id: str | None) -> list[dict[str, Any]]:
    assert file_id is not None
    return [json.loads(line) for line in client.files.content(file_id).text.splitlines()]


def said(recorded: Recorded) -> str:
    return str(recorded.body["messages"][-1]["content"])


def test_a_batch_runs_each_line_as_a_stateless_request_of_its_key(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    key = mint(server)
    client = sdk(server, key["key"])

    batch = submit(client, [chat_line(f"req-{n}", f"question {n}") for n in range(1, 4)])
    assert batch.id.startswith("batch_") and batch.object == "batch"
    assert (batch.status, batch.endpoint, batch.metadata) == (
        "in_progress",
        "/v1/chat/completions",
        {"job": "nightly"},
    )
    done = ended(client, batch.id)

    assert done.status == "completed" and done.error_file_id is None
    assert done.request_counts is not None
    assert (done.request_counts.total, done.request_counts.completed) == (3, 3)
    assert done.expires_at == done.created_at + 24 * 3600
    assert done.completed_at is not None and done.finalizing_at is not None
    output = sorted(read_file(client, done.output_file_id), key=lambda line: line["custom_id"])
    assert [line["custom_id"] for line in output] == ["req-1", "req-2", "req-3"]
    for number, line in enumerate(output, start=1):
        assert line["error"] is None and line["id"].startswith("batch_req_")
        response = line["response"]
        assert response["status_code"] == 200 and response["request_id"]
        body = response["body"]
        assert body["object"] == "chat.completion" and body["model"] == "assistant"
        assert body["choices"][0]["message"]["content"] == f"You said: question {number}"
        assert body["usage"]["total_tokens"] == 18
    assert sorted(said(recorded) for recorded in fakes["openai"].requests) == [
        "question 1",
        "question 2",
        "question 3",
    ]
    history = httpx.get(
        f"{server.url}/admin/conversations", params={"user": key["user"]}, headers=JSON, timeout=10
    ).json()
    assert history["data"] == []  # stateless: nothing kept
    spend = httpx.get(f"{server.url}/admin/keys/{key['id']}", headers=JSON, timeout=10).json()
    assert spend["spent_usd"] == pytest.approx(0.054)
    with sqlite3.connect(server.workdir / "gateway.sqlite3") as database:
        kinds = database.execute(
            "SELECT kind, COUNT(*) FROM inference_ledgerentry WHERE user_id = ? GROUP BY kind",
            (key["user"],),
        ).fetchall()
    assert kinds == [("batch", 3)]


def test_a_responses_batch_answers_in_the_responses_shape_and_stores_nothing(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    client = sdk(server, mint(server)["key"])
    asked = {"model": "assistant", "input": "Tell me"}
    line = {"custom_id": "r", "method": "POST", "url": "/v1/responses", "body": asked}
    chained = {
        **line,
        "custom_id": "chained",
        "body": {**asked, "previous_response_id": "resp_x"},
    }

    done = ended(client, submit(client, [line, chained], endpoint="/v1/responses").id)

    [output] = read_file(client, done.output_file_id)
    body = output["response"]["body"]
    assert body["object"] == "response" and body["status"] == "completed"
    assert body["output"][0]["content"][0]["text"] == "You said: Tell me"
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(body["id"])  # never stored
    [refused] = read_file(client, done.error_file_id)
    assert refused["custom_id"] == "chained" and refused["response"]["status_code"] == 400


def test_an_embeddings_batch_answers_in_the_embeddings_shape(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    client = sdk(server, mint(server)["key"])
    line = {
        "custom_id": "vector",
        "method": "POST",
        "url": "/v1/embeddings",
        "body": {"model": "embedder", "input": ["one two three"]},
    }

    done = ended(client, submit(client, [line], endpoint="/v1/embeddings").id)

    [output] = read_file(client, done.output_file_id)
    body = output["response"]["body"]
    assert body["object"] == "list" and body["model"] == "embedder"
    assert len(body["data"]) == 1 and body["data"][0]["object"] == "embedding"
    assert [recorded.path for recorded in fakes["openai"].requests] == ["/v1/embeddings"]


def test_an_input_that_does_not_validate_fails_the_batch_naming_each_line(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    client = sdk(server, mint(server)["key"])
    wrong_url = {**chat_line("d", "x"), "url": "/v1/embeddings"}
    lines: list[Any] = [
        "{not json",
        {"method": "POST", "url": "/v1/chat/completions", "body": {"model": "assistant"}},
        chat_line("a", "first"),
        chat_line("a", "again"),
        wrong_url,
        chat_line("e", "x", model="no-such-agent"),
    ]

    batch = submit(client, lines)

    assert batch.status == "failed" and batch.failed_at is not None
    assert batch.errors is not None and batch.errors.data is not None
    assert [(error.line, error.code) for error in batch.errors.data] == [
        (1, "invalid_json_line"),
        (2, "missing_custom_id"),
        (4, "duplicate_custom_id"),
        (5, "invalid_url"),
        (6, "model_not_found"),
    ]
    assert fakes["openai"].requests == []


def test_failed_lines_go_to_the_error_file_and_the_batch_goes_on(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    client = sdk(server, mint(server, agents=["assistant"])["key"])
    broken = {"error": {"message": "upstream broke", "type": "server_error"}}
    fakes["openai"].answer_when(
        lambda recorded: said(recorded) == "break", Reply.of_error(400, broken)
    )

    done = ended(
        client,
        submit(
            client,
            [
                chat_line("fine", "hello"),
                chat_line("forbidden", "hello", model="other"),
                chat_line("broken", "break"),
            ],
        ).id,
    )

    assert done.status == "completed"
    assert done.request_counts is not None
    assert (done.request_counts.completed, done.request_counts.failed) == (1, 2)
    [output] = read_file(client, done.output_file_id)
    assert output["custom_id"] == "fine"
    errors = {line["custom_id"]: line for line in read_file(client, done.error_file_id)}
    assert errors["forbidden"]["error"]["code"] == "model_not_allowed"
    assert errors["forbidden"]["response"]["status_code"] == 403
    assert errors["broken"]["error"]["code"] and errors["broken"]["error"]["message"]
    assert errors["broken"]["response"]["body"]["error"]["message"]
    assert sorted(said(recorded) for recorded in fakes["openai"].requests) == ["break", "hello"]


def test_a_spent_budget_fails_the_lines_after_it(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    """$0.02: two lines of $0.018 are admitted (the second while the key had spent less),
    the others fail with insufficient_quota and are never sent."""
    client = sdk(server, mint(server, budget_usd=0.02)["key"])

    done = ended(
        client, submit(client, [chat_line(f"r{n}", f"q{n}", max_tokens=5) for n in range(5)]).id
    )

    assert done.request_counts is not None
    assert (done.request_counts.completed, done.request_counts.failed) == (2, 3)
    codes = {line["error"]["code"] for line in read_file(client, done.error_file_id)}
    assert codes == {"insufficient_quota"}
    assert len(fakes["openai"].requests) == 2


def test_at_most_batches_concurrency_lines_are_in_flight_across_batches(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes["openai"]
    in_flight = fake.gauge(lambda recorded: True)
    fake.answer_when(lambda recorded: True, Reply.of_text("Later.", delay=0.3))
    client = sdk(server, mint(server)["key"])

    first = submit(client, [chat_line(f"r{n}", f"q{n}") for n in range(4)])
    second = submit(client, [chat_line(f"r{n}", f"q{n}") for n in range(4)])

    for batch in (first, second):
        done = ended(client, batch.id)
        assert done.request_counts is not None and done.request_counts.completed == 4
    assert in_flight.peak == 2  # the process's bound, shared by its batches


def test_cancel_stops_new_lines_and_the_ended_ones_are_delivered(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes["openai"]
    fake.answer_when(lambda recorded: True, Reply.of_text("Slowly.", delay=1.0))
    client = sdk(server, mint(server)["key"])
    batch = submit(client, [chat_line(f"r{n}", f"q{n}") for n in range(6)])
    wait_for(lambda: fake.requests, "the first line sent")

    cancelling = client.batches.cancel(batch.id)

    assert cancelling.status == "cancelling" and cancelling.cancelling_at is not None
    done = ended(client, batch.id)
    assert done.status == "cancelled" and done.cancelled_at is not None
    assert done.request_counts is not None
    sent = len(fake.requests)
    assert 1 <= sent < 6 and done.request_counts.completed == sent
    assert len(read_file(client, done.output_file_id)) == sent
    unsent = read_file(client, done.error_file_id)
    assert len(unsent) == 6 - sent
    assert {line["error"]["code"] for line in unsent} == {"batch_cancelled"}


def test_an_endpoint_no_dialect_batches_is_400_naming_those_that_do(
    server: GatewayServer,
) -> None:
    client = sdk(server, mint(server)["key"])

    for endpoint in ("/v1/completions", "/v1/messages"):
        with pytest.raises(openai.BadRequestError) as refused:
            submit(client, [chat_line("x", "hi")], endpoint=endpoint)
        error = refused.value.body
        assert isinstance(error, dict) and error["param"] == "endpoint"
        assert error["message"] == (
            "endpoint must be one of /v1/chat/completions, /v1/responses, /v1/embeddings"
        )


def test_another_users_batch_is_not_found(server: GatewayServer) -> None:
    owner = sdk(server, mint(server)["key"])
    other = sdk(server, mint(server)["key"])
    batch = submit(owner, [chat_line("x", "hi")])

    with pytest.raises(openai.NotFoundError):
        other.batches.retrieve(batch.id)
    with pytest.raises(openai.NotFoundError):
        other.batches.cancel(batch.id)
    assert [found.id for found in other.batches.list()] == []
    assert [found.id for found in owner.batches.list()] == [batch.id]


def test_message_batches_run_with_the_anthropic_sdk(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    key = mint(server, agents=["assistant"])
    client = anthropic.Anthropic(base_url=server.url, api_key=key["key"], max_retries=0)
    other = anthropic.Anthropic(base_url=server.url, api_key=mint(server)["key"], max_retries=0)

    def request(custom_id: str, model: str) -> Any:
        params = {
            "model": model,
            "max_tokens": 64,
            "messages": [{"role": "user", "content": custom_id}],
        }
        return {"custom_id": custom_id, "params": params}

    created = client.messages.batches.create(
        requests=[
            request("first", "assistant"),
            request("second", "assistant"),
            request("third", "other"),
        ]
    )

    assert created.id.startswith("msgbatch_") and created.type == "message_batch"
    assert created.processing_status == "in_progress"
    done = wait_for(
        lambda: (
            (found := client.messages.batches.retrieve(created.id)).processing_status == "ended"
            and found
        ),
        "the message batch to end",
    )
    counts = done.request_counts
    assert (counts.succeeded, counts.errored, counts.processing) == (2, 1, 0)
    assert done.ended_at is not None and done.results_url is not None
    results = {
        result.custom_id: result.result for result in client.messages.batches.results(created.id)
    }
    assert results["first"].type == "succeeded" and results["second"].type == "succeeded"
    first = results["first"].message
    assert first.type == "message" and first.content[0].text == "You said: first"
    assert results["third"].type == "errored"
    assert [batch.id for batch in client.messages.batches.list()] == [created.id]
    with pytest.raises(anthropic.NotFoundError):
        other.messages.batches.retrieve(created.id)
    with pytest.raises(anthropic.BadRequestError) as refused:
        client.messages.batches.create(
            requests=[request("same", "assistant"), request("same", "nobody")]
        )
    assert "requests.1" in refused.value.message


def test_a_message_batch_is_cancelled_with_the_anthropic_sdk(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes["openai"]
    fake.answer_when(lambda recorded: True, Reply.of_text("Slowly.", delay=1.0))
    client = anthropic.Anthropic(base_url=server.url, api_key=mint(server)["key"], max_retries=0)
    params = {
        "model": "assistant",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": "hi"}],
    }
    created = client.messages.batches.create(
        requests=[{"custom_id": f"r{n}", "params": params} for n in range(5)]  # type: ignore[typeddict-item]
    )
    wait_for(lambda: fake.requests, "the first request sent")

    canceling = client.messages.batches.cancel(created.id)

    assert canceling.processing_status == "canceling" and canceling.cancel_initiated_at
    done = wait_for(
        lambda: (
            (found := client.messages.batches.retrieve(created.id)).processing_status == "ended"
            and found
        ),
        "the cancelled batch to end",
    )
    sent = len(fake.requests)
    assert (done.request_counts.succeeded, done.request_counts.canceled) == (sent, 5 - sent)
    types = sorted(result.result.type for result in client.messages.batches.results(created.id))
    assert types == sorted(["succeeded"] * sent + ["canceled"] * (5 - sent))


def test_a_restart_mid_batch_sends_no_line_twice(
    tmp_path_factory: pytest.TempPathFactory, fakes: dict[str, FakeUpstream]
) -> None:
    """The process is killed with two lines in flight: another one takes the batch over
    once the lease ran out, fails those two as interrupted and sends the rest, each once."""
    fake = fakes["openai"]
    fake.answer_when(lambda recorded: True, Reply.of_text("Slowly.", delay=1.5))
    gateway = GatewayServer(
        tmp_path_factory.mktemp("restart"),
        config_text(fake),
        extra_env={"GATEWAY_LEASE_SECONDS": "2"},
    ).start()
    try:
        client = sdk(gateway, mint(gateway)["key"])
        batch = submit(client, [chat_line(f"r{n}", f"q{n}") for n in range(6)])
        wait_for(lambda: len(fake.requests) == 2, "two lines in flight")
        gateway.kill()
        gateway.start()
        client = sdk(gateway, client.api_key)

        done = ended(client, batch.id)
        errors = read_file(client, done.error_file_id)
    finally:
        gateway.stop()

    sent = [said(recorded) for recorded in fake.requests]
    assert sorted(sent) == sorted(set(sent)) and len(sent) == 6
    assert done.status == "completed" and done.request_counts is not None
    assert (done.request_counts.completed, done.request_counts.failed) == (4, 2)
    assert {line["error"]["code"] for line in errors} == {"interrupted"}
    in_flight_when_killed = sorted("r" + text.removeprefix("q") for text in sent[:2])
    assert sorted(line["custom_id"] for line in errors) == in_flight_when_killed


def test_the_admin_shows_each_batchs_progress_and_cost(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    key = mint(server, agents=["assistant"])
    client = sdk(server, key["key"])
    lines = [chat_line("a", "one"), chat_line("b", "two"), chat_line("c", "no", model="other")]
    batch = ended(client, submit(client, lines).id)

    listed = httpx.get(
        f"{server.url}/admin/batches", params={"user": key["user"]}, headers=JSON, timeout=10
    ).json()

    [row] = listed["data"]
    assert (row["id"], row["user"], row["endpoint"], row["status"]) == (
        batch.id,
        key["user"],
        "/v1/chat/completions",
        "completed",
    )
    assert row["request_counts"] == {"total": 3, "completed": 2, "failed": 1}
    assert row["cost_usd"] == pytest.approx(0.036)
    assert listed["next"] is None
    with chromium_page() as page:
        show_batches(page, server, key["user"], batch.id)


def show_batches(page: Page, server: GatewayServer, user: str, batch_id: str) -> None:
    page.goto(f"{server.url}/admin/")
    page.get_by_role("navigation").get_by_role("link", name="Batches").click()
    page.get_by_label("User").fill(user)
    page.get_by_role("button", name="Show").click()
    row = page.locator(f"tr[data-batch-id='{batch_id}']")
    expect(row.locator(".status")).to_have_text("completed")
    expect(row.locator(".done")).to_have_text("3 / 3")
    expect(row.locator(".failed")).to_have_text("1")
    expect(row.locator(".cost")).to_have_text("0.036000")
    assert row.locator("progress").get_attribute("value") == "3"
    shot(page, "batches")


def test_erasing_a_user_removes_their_batches_and_files(server: GatewayServer) -> None:
    key = mint(server)
    client = sdk(server, key["key"])
    batch = ended(client, submit(client, [chat_line("a", "one")]).id)
    assert batch.output_file_id is not None

    erased = httpx.delete(f"{server.url}/admin/users/{key['user']}", headers=JSON, timeout=10)

    assert erased.status_code == 200, erased.text
    assert erased.json()["removed"]["batches"] == 1
    assert erased.json()["removed"]["files"] == 2  # the input and the output
    with pytest.raises(openai.NotFoundError):
        client.batches.retrieve(batch.id)
    with pytest.raises(openai.NotFoundError):
        client.files.retrieve(batch.output_file_id)
    listed = httpx.get(
        f"{server.url}/admin/batches", params={"user": key["user"]}, headers=JSON, timeout=10
    ).json()
    assert listed["data"] == []


def test_batch_lines_wait_while_live_traffic_is_at_yield_above(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    """yield_above 1: while a live request is in flight, no line is sent; each line the
    fake receives finds no live call waiting there."""
    fake = fakes["openai"]
    live = fake.gauge(lambda recorded: said(recorded) == "live")
    fake.answer_when(lambda recorded: said(recorded) == "live", Reply.of_text("Live.", delay=1.5))
    live_seen_by_lines: list[int] = []

    def is_line(recorded: Recorded) -> bool:
        if said(recorded).startswith("line"):
            live_seen_by_lines.append(live.now)
            return True
        return False

    fake.answer_when(is_line, Reply.of_text("Line."))
    key = mint(server)
    client = sdk(server, key["key"])
    asking = threading.Thread(
        target=lambda: client.chat.completions.create(
            model="assistant", messages=[{"role": "user", "content": "live"}]
        )
    )
    asking.start()
    wait_for(lambda: live.now == 1, "the live request at the upstream")

    done = ended(client, submit(client, [chat_line(f"r{n}", f"line {n}") for n in range(4)]).id)
    asking.join()

    assert done.request_counts is not None and done.request_counts.completed == 4
    assert live_seen_by_lines == [0, 0, 0, 0]


def test_a_batch_past_its_window_expires_with_its_ended_lines_delivered(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes["openai"]
    fake.answer_when(lambda recorded: True, Reply.of_text("Slowly.", delay=1.0))
    client = sdk(server, mint(server)["key"])
    batch = submit(client, [chat_line(f"r{n}", f"q{n}") for n in range(6)])
    wait_for(lambda: fake.requests, "the first line sent")

    with sqlite3.connect(server.workdir / "gateway.sqlite3") as database:
        database.execute(
            "UPDATE inference_batch SET expires_at = '2000-01-01 00:00:00' WHERE id = ?",
            (batch.id,),
        )
    done = ended(client, batch.id)

    assert done.status == "expired" and done.expired_at is not None
    assert done.request_counts is not None
    sent = len(fake.requests)
    assert 1 <= sent < 6 and done.request_counts.completed == sent
    assert len(read_file(client, done.output_file_id)) == sent
    unsent = read_file(client, done.error_file_id)
    assert {line["error"]["code"] for line in unsent} == {"batch_expired"}
    assert len(unsent) == 6 - sent


def test_a_revoked_keys_batch_sends_no_more_lines(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes["openai"]
    fake.answer_when(lambda recorded: True, Reply.of_text("Slowly.", delay=1.0))
    key = mint(server)
    client = sdk(server, key["key"])
    batch = submit(client, [chat_line(f"r{n}", f"q{n}") for n in range(5)])
    wait_for(lambda: fake.requests, "the first line sent")

    revoked = httpx.delete(f"{server.url}/admin/keys/{key['id']}", timeout=10)
    assert revoked.status_code == 200

    def admin_row() -> dict[str, Any]:
        listed = httpx.get(
            f"{server.url}/admin/batches", params={"user": key["user"]}, headers=JSON, timeout=10
        ).json()
        row: dict[str, Any] = next(row for row in listed["data"] if row["id"] == batch.id)
        return row

    done = wait_for(
        lambda: admin_row()["status"] == "completed" and admin_row(), "the batch to end"
    )

    sent = len(fake.requests)
    assert done["request_counts"] == {"total": 5, "completed": sent, "failed": 5 - sent}
    assert 1 <= sent < 5
    with sqlite3.connect(server.workdir / "gateway.sqlite3") as database:
        codes = database.execute(
            "SELECT DISTINCT error_code FROM inference_batchline WHERE batch_id = ? "
            "AND status = 'failed'",
            (done["id"],),
        ).fetchall()
    assert codes == [("invalid_api_key",)]
