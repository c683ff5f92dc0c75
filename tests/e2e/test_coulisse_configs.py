"""A config written in Coulisse's own shapes (docs/configuration.md, "Coulisse's keys"),
served by a real gateway process: ``vars`` reach the upstream substituted, ``max_turns``
bounds the tool rounds, ``memory.user_state`` turns memory on for the agents with the
extraction model it names, ``identity: from_credential`` makes the principal the user, a
``type: webhook`` trigger takes /v1's credentials and fills its prompt from the payload,
a smoke test with an inline persona targets an experiment, stops at its marker and runs
its repetitions, an MCP server at a ``/sse`` URL is reached over SSE, and the keys kept
without effect are warned in the log."""

import json
import re
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.mcp_servers import http_greeter
from tests.polling import wait_for
from tests.server import GatewayServer, free_port
from tests.upstreams import fake_base_url

JSON = {"Accept": "application/json"}
CREDENTIALS = ("app", "app-password")


def config(fake: FakeUpstream, sse_port: int) -> str:
    return f"""\
# Written as a Coulisse user writes it.
default_user_id: main
memory:
  user_state:
    learn_from: {{provider: openai, model: gpt-learner}}
    recall_k: 2
vars:
  company: Initech
providers:
  openai: {{api_key: sk-test, base_url: '{fake_base_url(fake)}', retries: {{attempts: 0}}}}
public_base_url: http://127.0.0.1:1   # connect links; no server here asks for one
mcp:
  greeter:                             # Coulisse's shape: SSE, signs users in if asked
    url: http://127.0.0.1:{sse_port}/sse
  shared-greeter:                      # ours: one session over SSE
    transport: sse
    url: http://127.0.0.1:{sse_port}/sse
auth:
  proxy:
    basic: {{username: {CREDENTIALS[0]}, password: {CREDENTIALS[1]}}}
    identity: from_credential
judges:
  - name: quality
    provider: openai
    model: gpt-judge
    rubrics: {{helpful: Did it help?}}
agents:
  - name: clerk
    provider: openai
    model: gpt-clerk
    preamble: You answer for ${{vars.company}}.
    judges: [quality]
    subagents: [helper]
    max_turns: 1
  - name: greeting
    provider: openai
    model: gpt-greeting
    mcp_tools: [{{server: greeter, only: [say_hello]}}, {{server: shared-greeter, only: [add]}}]
  - {{name: helper, provider: openai, model: gpt-helper, purpose: Helps the clerk.}}
  - {{name: diarist, provider: openai, model: gpt-diarist}}
experiments:
  - name: front
    strategy: split
    variants: [{{agent: clerk}}]
triggers:
  - name: pr-opened
    type: webhook
    path: /hooks/pr-opened
    agent: front
    prompt: "Review {{{{repo}}}}#{{{{number}}}} by @{{{{author}}}}."
  - {{name: nightly, type: cron, schedule: "0 3 * * *", agent: clerk, prompt: Report.}}
smoke_tests:
  - name: angry
    target: front
    repetitions: 2
    persona:
      provider: openai
      model: gpt-persona
      preamble: You are an angry customer.
    initial_message: I was charged twice.
    stop_marker: "[FIN]"
    max_turns: 5
  - name: opener
    target: helper
    persona: {{provider: openai, model: gpt-opener, preamble: You open.}}
    max_turns: 1
server:
  worker_threads: 4
  max_body_bytes: 4096
storage:
  backend: local
  max_total_bytes: 3000
sidecars: {{}}
"""


def is_model(model: str) -> Any:
    return lambda recorded: isinstance(recorded.body, dict) and recorded.body.get("model") == model


def calls_of(fake: FakeUpstream, model: str) -> list[Recorded]:
    return [recorded for recorded in list(fake.requests) if is_model(model)(recorded)]


def system_of(recorded: Recorded) -> str:
    return "\n\n".join(m["content"] for m in recorded.body["messages"] if m["role"] == "system")


@pytest.fixture(scope="module")
def sse_greeter() -> Iterator[int]:
    with http_greeter(free_port(), "sse") as port:
        yield port


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream], sse_greeter: int
) -> Iterator[GatewayServer]:
    text = config(upstreams["openai"], sse_greeter)
    gateway = GatewayServer(tmp_path_factory.mktemp("coulisse"), text).start()
    yield gateway
    gateway.stop()


@pytest.fixture
def fake(fakes: dict[str, FakeUpstream]) -> FakeUpstream:
    fake = fakes["openai"]
    fake.answer_when(
        is_model("gpt-judge"),
        Reply.of_text(json.dumps({"helpful": {"score": 7, "reasoning": "ok"}})),
    )
    fake.answer_when(is_model("gpt-learner"), Reply.of_text(json.dumps({"facts": ["Likes tea."]})))
    return fake


def chat(server: GatewayServer, model: str, text: str, **headers: str) -> httpx.Response:
    return httpx.post(
        f"{server.url}/v1/chat/completions",
        json={"model": model, "messages": [{"role": "user", "content": text}]},
        auth=CREDENTIALS,
        headers=headers,
        timeout=30,
    )


def test_vars_reach_the_upstream_substituted_and_max_turns_bounds_the_tool_rounds(
    server: GatewayServer, fake: FakeUpstream
) -> None:
    fake.answer_when(is_model("gpt-clerk"), Reply.of_tool_calls(("helper", {"message": "help"})))

    response = chat(server, "clerk", "Loop, please.")

    assert response.status_code == 502, response.text
    assert response.json()["error"]["code"] == "tool_loop_limit"
    # max_turns: 1 is one tool round: the first call and the one after its round.
    clerk_calls = calls_of(fake, "gpt-clerk")
    assert len(clerk_calls) == 2
    assert len(calls_of(fake, "gpt-helper")) == 1
    assert system_of(clerk_calls[0]).startswith("You answer for Initech.")
    assert "${vars" not in json.dumps([call.body for call in clerk_calls])


def test_user_state_remembers_for_the_principal_with_the_model_it_names(
    server: GatewayServer, fake: FakeUpstream
) -> None:
    response = chat(server, "diarist", "I like tea.")
    assert response.status_code == 200, response.text

    def stored() -> list[tuple[str, str]]:
        with sqlite3.connect(Path(server.workdir) / "gateway.sqlite3") as database:
            return database.execute(
                "SELECT user_id, text FROM inference_memory WHERE agent = 'diarist'"
            ).fetchall()

    # identity: from_credential: the Basic username is the user, not default_user_id.
    assert wait_for(stored, "the extracted fact") == [("app", "Likes tea.")]
    (learner,) = calls_of(fake, "gpt-learner")
    assert "I like tea." in json.dumps(learner.body["messages"])
    embedded = [r for r in fake.requests if r.path.endswith("/embeddings")]
    assert {r.body["model"] for r in embedded} == {"text-embedding-3-small"}


def test_a_coulisse_webhook_takes_v1_credentials_and_fills_its_prompt_from_the_payload(
    server: GatewayServer, fake: FakeUpstream
) -> None:
    body = {"repo": "acme/api", "number": 7, "author": "ada"}
    hook = f"{server.url}/hooks/pr-opened"

    assert httpx.post(hook, json=body, timeout=10).status_code == 401
    assert httpx.post(hook, json=body, auth=("app", "wrong"), timeout=10).status_code == 401
    assert calls_of(fake, "gpt-clerk") == []
    accepted = httpx.post(hook, json=body, auth=CREDENTIALS, timeout=10)
    assert accepted.status_code == 202, accepted.text

    (call,) = wait_for(lambda: calls_of(fake, "gpt-clerk"), "the trigger's turn")
    asked = [m["content"] for m in call.body["messages"] if m["role"] == "user"]
    assert asked[-1] == "Review acme/api#7 by @ada."
    listed = httpx.get(f"{server.url}/admin/triggers", headers=JSON, timeout=10).json()["data"]
    kinds = {trigger["name"]: (trigger["kind"], trigger["user"]) for trigger in listed}
    assert kinds == {"pr-opened": ("webhook", "main"), "nightly": ("schedule", "main")}


def test_a_coulisse_smoke_test_stops_at_its_marker_and_holds_its_repetitions(
    server: GatewayServer, fake: FakeUpstream
) -> None:
    fake.answer_when(is_model("gpt-persona"), Reply.of_text("Fine. [FIN]"))
    fake.answer_when(is_model("gpt-clerk"), Reply.of_text("Refunded."))
    started = httpx.post(f"{server.url}/admin/smoke-tests/angry/runs", json={}, timeout=10)
    assert started.status_code == 202, started.text

    def done() -> dict[str, Any] | None:
        tests = httpx.get(f"{server.url}/admin/smoke-tests", headers=JSON, timeout=10).json()
        test = next(test for test in tests["data"] if test["name"] == "angry")
        runs = [run for run in test["runs"] if run["id"] == started.json()["id"]]
        return runs[0] if runs and runs[0]["status"] in ("done", "failed") else None

    run = wait_for(done, "the smoke test's run")
    assert run["status"] == "done", run
    conversation = [
        {"role": "persona", "text": "I was charged twice."},
        {"role": "agent", "text": "Refunded."},
        {"role": "persona", "text": "Fine. [FIN]"},
    ]
    assert run["transcript"] == [
        *({**line, "conversation": 1} for line in conversation),
        *({**line, "conversation": 2} for line in conversation),
    ]
    # The judges are the target's (its variants'), the persona its own inline model.
    assert set(run["scores"]) == {"quality"}
    persona_calls = calls_of(fake, "gpt-persona")
    assert len(persona_calls) == 2
    assert system_of(persona_calls[0]) == "You are an angry customer."


def test_an_sse_url_is_served_over_sse(server: GatewayServer, fake: FakeUpstream) -> None:
    def state(name: str) -> dict[str, Any]:
        found: dict[str, Any] = httpx.get(
            f"{server.url}/admin/mcp/{name}/state", headers=JSON, timeout=10
        ).json()
        return found

    shared = wait_for(
        lambda: found if (found := state("shared-greeter"))["state"] == "connected" else None,
        "the shared SSE session",
    )
    assert shared["transport"] == "sse"
    # Written without transport and oauth: SSE, a session per user (none asked for here).
    assert (state("greeter")["transport"], state("greeter")["state"]) == ("sse", "per-user")
    fake.script(
        Reply.of_tool_calls(("say_hello", {"name": "Ana"}), ("add", {"a": 2, "b": 3})),
        Reply.of_text("Done."),
    )

    assert chat(server, "greeting", "Greet Ana.").status_code == 200
    results = [
        m for m in calls_of(fake, "gpt-greeting")[-1].body["messages"] if m["role"] == "tool"
    ]
    assert [m["content"] for m in results] == ["Hello, Ana!", "5"]


def test_server_max_body_bytes_bounds_v1_bodies_and_keys_without_effect_are_warned(
    server: GatewayServer,
) -> None:
    big = chat(server, "clerk", "x" * 5000)
    assert big.status_code == 413, big.text
    events = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    warned = {event["key"] for event in events if event.get("event") == "config_warning"}
    assert warned == {"server.worker_threads", "sidecars"}


def test_a_persona_without_an_initial_message_opens_the_conversation(
    server: GatewayServer, fake: FakeUpstream
) -> None:
    fake.answer_when(is_model("gpt-opener"), Reply.of_text("Hello, I need help."))
    fake.answer_when(is_model("gpt-helper"), Reply.of_text("Sure."))
    started = httpx.post(f"{server.url}/admin/smoke-tests/opener/runs", json={}, timeout=10)
    assert started.status_code == 202, started.text

    def done() -> dict[str, Any] | None:
        tests = httpx.get(f"{server.url}/admin/smoke-tests", headers=JSON, timeout=10).json()
        test = next(test for test in tests["data"] if test["name"] == "opener")
        finished = [run for run in test["runs"] if run["status"] in ("done", "failed")]
        return finished[0] if finished else None

    run = wait_for(done, "the smoke test's run")
    assert run["transcript"] == [
        {"role": "persona", "text": "Hello, I need help.", "conversation": 1},
        {"role": "agent", "text": "Sure.", "conversation": 1},
    ]
    (opening,) = calls_of(fake, "gpt-opener")
    asked = [m for m in opening.body["messages"] if m["role"] != "system"]
    assert [m["role"] for m in asked] == ["user"]  # asked to open, in its role
    helper = calls_of(fake, "gpt-helper")[-1]
    assert [m["content"] for m in helper.body["messages"] if m["role"] == "user"] == [
        "Hello, I need help."
    ]


def test_storage_max_total_bytes_bounds_all_files_together(server: GatewayServer) -> None:
    def upload(size: int) -> httpx.Response:
        files = {"file": ("notes.txt", b"x" * size, "text/plain")}
        return httpx.post(
            f"{server.url}/v1/files",
            files=files,
            data={"purpose": "user_data"},
            auth=CREDENTIALS,
            timeout=10,
        )

    kept = upload(2000)
    assert kept.status_code == 200, kept.text
    refused = upload(2000)
    assert refused.status_code == 400, refused.text
    assert refused.json()["error"]["code"] == "quota_exceeded"
    assert "files.max_total_mb" in refused.json()["error"]["message"]
    gone = httpx.delete(f"{server.url}/v1/files/{kept.json()['id']}", auth=CREDENTIALS)
    assert gone.status_code == 200
    assert upload(2000).status_code == 200


def test_the_admin_shows_an_agent_as_loaded(server: GatewayServer) -> None:
    page = httpx.get(
        f"{server.url}/admin/agents/clerk", headers={"Accept": "text/html"}, timeout=10
    )
    assert page.status_code == 200, page.text
    shown = re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", page.text.split('class="as-loaded"')[1]))
    assert "You answer for Initech." in shown
    assert "1 (max_turns)" in shown
    assert "on: embedder memory:embedder, extractor openai/gpt-learner, recall 2" in shown
