"""Work a request starts carries its caller (docs/cost-and-keys.md, "Who pays"), through
real gateway processes and the OpenAI wire-format fake: background tasks run under the
key that dispatched them (its agents, its budget), are bounded per turn, in depth and in
attempts, and stop when the key is revoked; concurrent multi-call turns under one key,
on two workers, overshoot its budget and its tokens per minute by at most one call."""

import json
import sqlite3
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.keys import mint
from tests.polling import wait_for
from tests.server import GatewayServer
from tests.upstreams import fake_base_url

JSON = {"Accept": "application/json"}
FAST = {"GATEWAY_LEASE_SECONDS": "2"}
# A priced model: a token costs $0.0001 (100 USD per million, input and output alike).
CONFIG = """\
auth: {{proxy: {{api_keys: true}}}}
providers:
  openai: {{api_key: sk-test, base_url: '{url}', retries: {{attempts: 0}}}}
pricing:
  "openai/priced": {{input: 100, output: 100}}
agents:
  - {{name: boss, provider: openai, model: boss-model, history: false, tasks: true}}
  - {{name: secret, provider: openai, model: priced, history: false}}
  - {{name: worker, provider: openai, model: worker-model, history: false}}
  - {{name: relay, provider: openai, model: relay-model, history: false, tasks: true}}
  - {{name: loop0, provider: openai, model: priced, history: false, subagents: [loop1]}}
  - {{name: loop1, provider: openai, model: priced, history: false, subagents: [loop2]}}
  - {{name: loop2, provider: openai, model: priced, history: false}}
limits: {{tasks_concurrency: 8}}
"""


def is_model(model: str) -> Any:
    return lambda recorded: isinstance(recorded.body, dict) and recorded.body.get("model") == model


def offers(tool: str) -> Any:
    def matches(recorded: Recorded) -> bool:
        tools = recorded.body.get("tools") or [] if isinstance(recorded.body, dict) else []
        return any(offered["function"]["name"] == tool for offered in tools)

    return matches


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    config = CONFIG.format(url=fake_base_url(upstreams["openai"]))
    gateway = GatewayServer(
        tmp_path_factory.mktemp("callers"), config, workers=2, extra_env=FAST
    ).start()
    yield gateway
    gateway.stop()


def chat(server: GatewayServer, key: str, model: str, **body: Any) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/chat/completions",
        headers={"Authorization": f"Bearer {key}"},
        json={"model": model, "messages": [{"role": "user", "content": "Go"}], **body},
        timeout=60,
    )


def tool_results(fake: FakeUpstream, model: str) -> list[str]:
    """What the gateway told ``model`` its own tools answered, in order."""
    return [
        message["content"]
        for recorded in list(fake.requests)
        if is_model(model)(recorded)
        for message in recorded.body["messages"]
        if message["role"] == "tool"
    ]


def spend(server: GatewayServer, key_id: int) -> dict[str, Any]:
    """The key's row of the spend table: requests, tokens and cost billed to it."""
    response = httpx.get(
        f"{server.url}/admin/spend", params={"group_by": "key"}, headers=JSON, timeout=10
    )
    assert response.status_code == 200, response.text
    rows = {row["group"]: row for row in response.json()["data"]}
    return rows.get(key_id, {"requests": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0})


def tasks(server: GatewayServer) -> list[tuple[str, str, str]]:
    """Every task as the database holds it: (agent, status, error)."""
    with sqlite3.connect(server.workdir / "gateway.sqlite3") as database:
        rows = database.execute("SELECT agent, status, error FROM inference_agenttask")
        return [(agent, status, error) for agent, status, error in rows]


def calls_to(fake: FakeUpstream, model: str) -> list[Recorded]:
    return [recorded for recorded in list(fake.requests) if is_model(model)(recorded)]


def test_a_key_dispatches_no_task_of_an_agent_it_may_not_use(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes["openai"]
    leak = ("dispatch_task", {"agent": "secret", "message": "leak"})
    fake.script(Reply.of_tool_calls(leak, leak, leak), Reply.of_text("Done."))
    created = mint(server, agents=["boss"], budget_usd=0.005, rpm=5)
    before = len(tasks(server))

    response = chat(server, created["key"], "boss")

    assert response.status_code == 200, response.text
    assert (
        tool_results(fake, "boss-model")
        == ["Error: the API key may not use agent 'secret' (it may use: boss)"] * 3
    )
    assert tasks(server)[before:] == []  # no task to run later: nothing reaches the agent
    assert calls_to(fake, "priced") == []


def test_a_turn_dispatches_at_most_max_tasks_per_turn(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes["openai"]
    fake.answer_when(is_model("worker-model"), Reply.of_text("done"))
    dispatches = [("dispatch_task", {"agent": "worker", "message": f"job {n}"}) for n in range(10)]
    fake.script(Reply.of_tool_calls(*dispatches), Reply.of_text("Dispatched."))
    created = mint(server)

    assert chat(server, created["key"], "boss").status_code == 200

    results = tool_results(fake, "boss-model")
    started = [json.loads(result)["task_id"] for result in results if result.startswith("{")]
    refused = [result for result in results if result.startswith("Error:")]
    assert len(started) == 8
    assert (
        refused
        == ["Error: the turn dispatched 8 tasks already (limits.max_tasks_per_turn is 8)"] * 2
    )
    wait_for(lambda: len(calls_to(fake, "worker-model")) == 8, "the tasks")
    asked = sorted(call.body["messages"][-1]["content"] for call in calls_to(fake, "worker-model"))
    assert asked == sorted(f"job {n}" for n in range(8))


def test_tasks_dispatching_tasks_stop_at_max_task_depth(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    """``relay`` dispatches ``relay`` whenever asked: the turn's task may dispatch one
    more, that one may not (limits.max_task_depth: 2)."""
    fake = fakes["openai"]
    fake.answer_when(
        lambda recorded: (
            is_model("relay-model")(recorded) and recorded.body["messages"][-1]["role"] == "user"
        ),
        Reply.of_tool_calls(("dispatch_task", {"agent": "relay", "message": "again"})),
    )
    fake.answer_when(is_model("relay-model"), Reply.of_text("passed on"))
    created = mint(server)
    before = len(tasks(server))

    assert chat(server, created["key"], "relay").status_code == 200

    def three_relays() -> list[str] | None:
        results = tool_results(fake, "relay-model")
        return results if len(results) == 3 else None

    results = wait_for(three_relays, "the request, its task and that task's task")
    assert [result.startswith("{") for result in results] == [True, True, False]
    assert results[2] == (
        "Error: a task 2 levels down may not dispatch tasks (limits.max_task_depth is 2)"
    )

    def ended() -> list[tuple[str, str, str]] | None:
        mine = tasks(server)[before:]
        return mine if all(status in ("done", "failed") for _, status, _ in mine) else None

    # Both tasks ended and no other was made: no turn is left that could dispatch more.
    assert wait_for(ended, "the two tasks to end") == [("relay", "done", "")] * 2
    assert len(tool_results(fake, "relay-model")) == 3


def test_tasks_run_under_the_keys_budget_and_are_billed_to_the_key(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    """Four tasks of a priced agent under a $0.005 budget: the key pays for the calls
    that ran (at most one past its budget), the others fail for the budget."""
    fake = fakes["openai"]
    fake.answer_when(
        is_model("priced"), Reply.of_text("secret answer", prompt_tokens=20, completion_tokens=20)
    )
    go = ("dispatch_task", {"agent": "secret", "message": "go"})
    fake.script(Reply.of_tool_calls(go, go, go, go), Reply.of_text("Dispatched."))
    before = len(tasks(server))
    created = mint(server, agents=["boss", "secret"], budget_usd=0.005)

    assert chat(server, created["key"], "boss").status_code == 200

    def ended() -> list[tuple[str, str, str]] | None:
        mine = tasks(server)[before:]
        return mine if all(status in ("done", "failed") for _, status, _ in mine) else None

    ended_tasks = wait_for(ended, "the four tasks to end")
    statuses = sorted(status for _, status, _ in ended_tasks)
    ran = len(calls_to(fake, "priced"))
    assert statuses.count("done") == ran >= 1  # each task is one call of $0.004
    failures = {error for _, status, error in ended_tasks if status == "failed"}
    assert failures and all("budget is spent" in error for error in failures), failures
    row = spend(server, created["id"])
    assert row["cost_usd"] == pytest.approx(0.004 * ran)
    assert row["cost_usd"] <= 0.005 + 0.004 + 1e-9


def test_a_revoked_keys_task_fails_before_its_next_call(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    """The task's turn is three calls deep (loop0 → loop1 → loop2); the key is revoked
    during its first call."""
    fake = loops(fakes["openai"], delay=1.5)
    run = ("dispatch_task", {"agent": "loop0", "message": "x"})
    fake.script(Reply.of_tool_calls(run), Reply.of_text("Dispatched."))
    before = len(tasks(server))
    created = mint(server)
    assert chat(server, created["key"], "boss").status_code == 200
    wait_for(lambda: len(calls_to(fake, "priced")) == 1, "the task's first call")

    revoked = httpx.delete(f"{server.url}/admin/keys/{created['id']}", headers=JSON, timeout=10)
    assert revoked.status_code == 200, revoked.text

    def ended() -> tuple[str, str, str] | None:
        (task,) = tasks(server)[before:]
        return task if task[1] in ("done", "failed") else None

    assert wait_for(ended, "the task to end") == ("loop0", "failed", "The API key was revoked")
    assert len(calls_to(fake, "priced")) == 1


# Every call of the loop agents: 1 prompt token and 7 completion tokens, $0.0008, as
# estimated before the turn's first call (a one-character message, max_tokens 7).
CALL_USD, CALL_TOKENS = 0.0008, 8


def test_concurrent_multi_call_turns_overshoot_a_keys_budget_by_at_most_one_call(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    """32 turns at once on two workers, each as deep as its calls are admitted (every
    loop agent calls its subagent whenever it is asked), under a $0.01 budget."""
    fake = loops(fakes["openai"])
    created = mint(server, budget_usd=0.01)

    statuses = flood(server, created["key"], 32)

    assert 429 in statuses
    row = spend(server, created["id"])
    assert row["cost_usd"] == pytest.approx(CALL_USD * len(calls_to(fake, "priced")))
    assert row["cost_usd"] <= 0.01 + CALL_USD + 1e-9, row


def test_concurrent_multi_call_turns_overshoot_a_keys_tpm_by_at_most_one_call(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    fake = loops(fakes["openai"])
    created = mint(server, tpm=100)

    statuses = flood(server, created["key"], 32)

    assert 429 in statuses
    row = spend(server, created["id"])
    tokens = row["input_tokens"] + row["output_tokens"]
    assert tokens == CALL_TOKENS * len(calls_to(fake, "priced"))
    assert tokens <= 100 + CALL_TOKENS, row


def loops(fake: FakeUpstream, delay: float = 0.02) -> FakeUpstream:
    """loop0 and loop1 call their subagent whenever they are asked, loop2 answers; every
    call takes ``delay``, so that the turns overlap."""
    usage = {"prompt_tokens": 1, "completion_tokens": 7, "delay": delay}
    for level in (1, 2):
        fake.answer_when(
            offers(f"loop{level}"), Reply.of_tool_calls((f"loop{level}", {"message": "x"}), **usage)
        )
    fake.answer_when(is_model("priced"), Reply.of_text("bottom", **usage))
    return fake


def flood(server: GatewayServer, key: str, turns: int) -> list[int]:
    def one(_: int) -> int:
        response = chat(
            server, key, "loop0", max_tokens=7, messages=[{"role": "user", "content": "x"}]
        )
        assert response.status_code in (200, 429, 502), response.text
        return response.status_code

    with ThreadPoolExecutor(max_workers=turns) as pool:
        return list(pool.map(one, range(turns)))


@pytest.mark.slow
def test_an_interrupted_task_taken_up_max_task_attempts_times_fails(
    tmp_path: Path, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes["openai"]
    fake.answer_when(is_model("worker-model"), Reply.of_text("never", delay=120))
    fake.script(
        Reply.of_tool_calls(("dispatch_task", {"agent": "worker", "message": "hang"})),
        Reply.of_text("Dispatched."),
    )
    config = CONFIG.format(url=fake_base_url(fake)).replace(
        "limits: {tasks_concurrency: 8}", "limits: {max_task_attempts: 2}"
    )
    gateway = GatewayServer(tmp_path, config, extra_env=FAST).start()
    try:
        key = mint(gateway)["key"]
        assert chat(gateway, key, "boss").status_code == 200
        (task_id,) = [json.loads(result)["task_id"] for result in tool_results(fake, "boss-model")]
        for attempt in (1, 2):
            wait_for(
                lambda attempt=attempt: len(calls_to(fake, "worker-model")) == attempt,
                f"attempt {attempt} of the task",
            )
            gateway.kill()
            gateway.start()
        # The lease ran out: the runner has looked at the task again and given it up.
        wait_for(lambda: [status for _, status, _ in tasks(gateway)] == ["failed"], "the end")

        fake.script(
            Reply.of_tool_calls(("task_status", {"task_id": task_id})), Reply.of_text("Seen.")
        )
        assert chat(gateway, key, "boss").status_code == 200
        status = json.loads(tool_results(fake, "boss-model")[-1])
        assert status == {"status": "failed", "error": "interrupted 2 times"}
        assert len(calls_to(fake, "worker-model")) == 2
    finally:
        gateway.stop()
