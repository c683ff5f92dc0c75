"""Agents on their own (docs/automation.md), through real gateway processes and the
OpenAI wire-format fake: signed webhooks and their signed, retried deliveries; schedules
that fire once per due minute across two processes on PostgreSQL; background tasks an
agent dispatches with its own tools, resumed after a SIGKILL; smoke tests run from the
admin and from the command, whose exit status follows min_score."""

import hashlib
import hmac
import itertools
import json
import re
import sqlite3
import threading
import time
from collections.abc import Iterator
from datetime import datetime, timedelta
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import httpx
import psycopg
import pytest
from playwright.sync_api import Page, expect

from inference.ledger.writer import DEFER_SECONDS
from tests.browser import chromium_page, shot
from tests.e2e.test_management_commands import manage
from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.polling import wait_for
from tests.server import GatewayServer
from tests.upstreams import fake_base_url

JSON = {"Accept": "application/json"}
HOOK_SECRET = "hook-secret-0123"
DELIVER_SECRET = "deliver-secret-4567"
VERDICT = {
    "helpful": {"score": 8, "reasoning": "Useful."},
    "polite": {"score": 6, "reasoning": "Curt."},
}
FAST = {"GATEWAY_DELIVERY_BACKOFF_SECONDS": "0.05", "GATEWAY_LEASE_SECONDS": "2"}


def signature(secret: str, timestamp: str, body: bytes) -> str:
    signed = f"{timestamp}.".encode() + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def sign(secret: str, body: bytes, seconds_ago: float = 0) -> dict[str, str]:
    """The headers of ``body`` signed ``seconds_ago`` (as docs/automation.md signs)."""
    timestamp = str(int(time.time() - seconds_ago))
    return {
        "X-Gateway-Timestamp": timestamp,
        "X-Gateway-Signature": signature(secret, timestamp, body),
    }


class Receiver:
    """The URL deliveries go to: answers 500 to the first one, 200 after; keeps them all."""

    def __init__(self) -> None:
        self.received: list[tuple[dict[str, str], bytes]] = []
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                receiver.received.append((dict(self.headers), body))
                status = 500 if len(receiver.received) == 1 else 200
                self.send_response(status)
                self.send_header("Content-Length", "0")
                self.end_headers()

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/deliveries"


def provider(fake: FakeUpstream) -> str:
    return f"providers:\n  openai: {{api_key: sk-test, base_url: '{fake_base_url(fake)}', retries: {{attempts: 0}}}}\n"


def config(fake: FakeUpstream, receiver: Receiver) -> str:
    return (
        provider(fake)
        + f"""\
agents:
  - {{name: hooked, provider: openai, model: gpt-hook, history: false}}
  - {{name: boss, provider: openai, model: gpt-boss, history: false, tasks: true}}
  - {{name: worker, provider: openai, model: gpt-worker, history: false}}
  - {{name: support, provider: openai, model: gpt-support}}
  - {{name: customer, provider: openai, model: gpt-persona}}
judges:
  - name: quality
    provider: openai
    model: gpt-judge
    rubrics: {{helpful: Did the agent help?, polite: Was it polite?}}
triggers:
  - name: orders
    agent: hooked
    user: ops
    message: "Order {{{{ body.order }}}} from {{{{ body.who }}}} & co arrived"
    webhook: {{secret: {HOOK_SECRET}}}
    deliver: {{url: '{receiver.url}', secret: {DELIVER_SECRET}}}
  - {{name: yearly, agent: hooked, user: ops, message: hi, schedule: "0 0 1 1 *"}}
  - {{name: broke, agent: hooked, user: broke, message: hi, webhook: {{secret: {HOOK_SECRET}}}}}
budgets:
  users: {{broke: {{tokens_per_day: 0}}}}
smoke_tests:
  - {{name: kind, agent: support, persona: customer, opening: My order is late., turns: 2, judges: [quality], min_score: 5}}
  - {{name: edge, agent: support, persona: customer, opening: Hello, turns: 1, judges: [quality], min_score: 7}}
  - {{name: strict, agent: support, persona: customer, opening: Hello, turns: 1, judges: [quality], min_score: 9}}
"""
    )


def is_model(model: str) -> Any:
    return lambda recorded: isinstance(recorded.body, dict) and recorded.body.get("model") == model


@pytest.fixture(scope="module")
def receiver() -> Iterator[Receiver]:
    receiver = Receiver()
    yield receiver
    receiver.server.shutdown()


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream], receiver: Receiver
) -> Iterator[GatewayServer]:
    workdir = tmp_path_factory.mktemp("automation")
    gateway = GatewayServer(workdir, config(upstreams["openai"], receiver), extra_env=FAST)
    gateway.start()
    yield gateway
    gateway.stop()


@pytest.fixture
def fake(fakes: dict[str, FakeUpstream]) -> FakeUpstream:
    fake = fakes["openai"]
    fake.answer_when(is_model("gpt-judge"), Reply.of_text(json.dumps(VERDICT)))
    fake.answer_when(is_model("gpt-persona"), Reply.of_text("Where is it now?"))
    fake.answer_when(is_model("gpt-worker"), Reply.of_text("One, two, three."))
    return fake


def triggers(server: GatewayServer) -> dict[str, Any]:
    response = httpx.get(f"{server.url}/admin/triggers", headers=JSON, timeout=10)
    assert response.status_code == 200, response.text
    return {trigger["name"]: trigger for trigger in response.json()["data"]}


def calls_of(fake: FakeUpstream, model: str) -> list[Recorded]:
    return [recorded for recorded in list(fake.requests) if is_model(model)(recorded)]


# Webhooks and deliveries


def test_a_webhook_without_a_valid_signature_is_refused_and_runs_nothing(
    server: GatewayServer, fake: FakeUpstream
) -> None:
    body = json.dumps({"order": 7}).encode()
    hook = f"{server.url}/hooks/orders"
    missing = httpx.post(hook, content=body, timeout=10)
    wrong = httpx.post(hook, content=body, headers=sign("nope", body))
    tampered = httpx.post(hook, content=body + b" ", headers=sign(HOOK_SECRET, body))
    untimed = httpx.post(
        hook,
        content=body,
        headers={"X-Gateway-Signature": sign(HOOK_SECRET, body)["X-Gateway-Signature"]},
    )
    assert [missing.status_code, wrong.status_code, tampered.status_code] == [401, 401, 401]
    assert untimed.status_code == 401 and untimed.json()["code"] == "invalid_timestamp"
    assert httpx.post(f"{server.url}/hooks/nothing", content=body).status_code == 404
    assert httpx.post(f"{server.url}/hooks/yearly", content=body).status_code == 404
    assert triggers(server)["orders"]["runs"] == []
    assert calls_of(fake, "gpt-hook") == []


@pytest.mark.parametrize(("seconds_ago", "accepted"), [(290, True), (310, False), (-70, False)])
def test_a_webhook_signed_out_of_its_window_is_refused(
    server: GatewayServer, fake: FakeUpstream, seconds_ago: float, accepted: bool
) -> None:
    """Up to 300 s old, at most 60 s ahead (a few seconds of margin either side)."""
    body = json.dumps({"at": seconds_ago}).encode()
    response = httpx.post(
        f"{server.url}/hooks/broke", content=body, headers=sign(HOOK_SECRET, body, seconds_ago)
    )
    if accepted:
        assert response.status_code == 202, response.text
    else:
        assert response.status_code == 401, response.text
        assert response.json()["code"] == "stale_timestamp"


def test_a_webhook_body_over_the_limit_is_413_before_its_signature_is_checked(
    server: GatewayServer, fake: FakeUpstream
) -> None:
    """limits.webhook_max_body_kb: 1024 by default. Correctly signed or not, larger is 413."""
    body = b'{"pad": "' + b"x" * (1024 * 1024) + b'"}'
    hook = f"{server.url}/hooks/broke"
    signed = httpx.post(hook, content=body, headers=sign(HOOK_SECRET, body), timeout=30)
    unsigned = httpx.post(hook, content=body, timeout=30)
    assert [signed.status_code, unsigned.status_code] == [413, 413], signed.text
    assert signed.json()["code"] == "request_too_large"
    fits = b'{"pad": "' + b"x" * (1000 * 1024) + b'"}'
    assert httpx.post(hook, content=fits, headers=sign(HOOK_SECRET, fits)).status_code == 202


def test_a_signed_webhook_is_accepted_once_whichever_process_it_reaches(
    tmp_path: Path, upstreams: dict[str, FakeUpstream], receiver: Receiver
) -> None:
    """A replayed body, headers and all: 409 ``replayed`` on the worker that took it and
    on the other one (the database holds what was accepted)."""
    workers = GatewayServer(
        tmp_path, config(upstreams["openai"], receiver), workers=2, extra_env=FAST
    ).start()
    try:
        body = json.dumps({"order": "once"}).encode()
        headers = sign(HOOK_SECRET, body)
        statuses = []
        for worker in [*workers.worker_pids(), workers.worker_pids()[0]]:
            time.sleep(DEFER_SECONDS + 0.5)  # no deferred write holds SQLite's write lock
            with workers.only(worker):
                response = httpx.post(
                    f"{workers.url}/hooks/broke", content=body, headers=headers, timeout=10
                )
            statuses.append(response.status_code)
            if response.status_code == 409:
                assert response.json()["code"] == "replayed"
        assert statuses == [202, 409, 409]
        assert len(triggers(workers)["broke"]["runs"]) == 1
    finally:
        workers.stop()


def test_a_signed_webhook_runs_the_agent_and_its_reply_is_delivered_signed_after_a_retry(
    server: GatewayServer, fake: FakeUpstream, receiver: Receiver
) -> None:
    body = json.dumps({"order": 42, "who": "Ada"}).encode()
    response = httpx.post(
        f"{server.url}/hooks/orders", content=body, headers=sign(HOOK_SECRET, body), timeout=10
    )
    assert response.status_code == 202, response.text
    run_id = response.json()["run"]

    def done() -> dict[str, Any] | None:
        runs = {run["id"]: run for run in triggers(server)["orders"]["runs"]}
        run = runs.get(run_id)
        return run if run is not None and run["status"] in ("done", "failed") else None

    run = wait_for(done, "the webhook's run")
    # The message is a template, rendered without HTML escaping.
    assert run["reply"] == "You said: Order 42 from Ada & co arrived"
    assert run["status"] == "done"
    listed = triggers(server)["orders"]
    assert (listed["kind"], listed["agent"], listed["user"], listed["next_fire_at"]) == (
        "webhook",
        "hooked",
        "ops",
        None,
    )
    assert triggers(server)["yearly"]["next_fire_at"].startswith(("2027-01-01", "2028-01-01"))

    wait_for(lambda: len(receiver.received) >= 2, "the delivery and its retry")
    for headers, sent in receiver.received[:2]:
        # Signed like a webhook, each try anew: a receiver checks the window and replays.
        stamp = headers["X-Gateway-Timestamp"]
        assert abs(int(stamp) - time.time()) < 300
        assert headers["X-Gateway-Signature"] == signature(DELIVER_SECRET, stamp, sent)
        delivered = json.loads(sent)
        assert delivered["trigger"] == "orders" and delivered["run"] == run_id
        assert delivered["reply"] == run["reply"]
        assert delivered["usage"]["total_tokens"] == 18
    wait_for(lambda: triggers(server)["orders"]["runs"][0]["delivery"] == "delivered", "delivered")
    page = httpx.get(f"{server.url}/admin/triggers", timeout=10)
    assert page.status_code == 200 and "Order 42 from Ada &amp; co arrived" in page.text


def test_a_webhook_run_refused_for_budget_is_a_failed_run(
    server: GatewayServer, fake: FakeUpstream
) -> None:
    body = b"{}"
    response = httpx.post(
        f"{server.url}/hooks/broke", content=body, headers=sign(HOOK_SECRET, body), timeout=10
    )
    assert response.status_code == 202, response.text
    run_id = response.json()["run"]

    def ended() -> dict[str, Any] | None:
        runs = {run["id"]: run for run in triggers(server)["broke"]["runs"]}
        run = runs.get(run_id)
        return run if run is not None and run["status"] != "running" else None

    run = wait_for(ended, "the refused run")
    assert run["status"] == "failed" and "budget" in run["error"].lower(), run
    assert run["reply"] == "" and calls_of(fake, "gpt-hook") == []


@pytest.mark.slow
def test_on_start_fires_once_per_start_and_a_new_start_fails_what_the_last_left_running(
    tmp_path: Path, fake: FakeUpstream
) -> None:
    fake.reset()
    first = threading.Event()

    def first_call(recorded: Recorded) -> bool:
        if is_model("gpt-start")(recorded) and not first.is_set():
            first.set()
            return True
        return False

    # The first start's turn hangs (the deployment is killed meanwhile); later ones answer.
    fake.answer_when(first_call, Reply.of_text("never", delay=120))
    fake.answer_when(is_model("gpt-start"), Reply.of_text("Up and running."))
    text = provider(fake) + (
        "agents:\n  - {name: starter, provider: openai, model: gpt-start, history: false}\n"
        "triggers:\n  - {name: boot, agent: starter, user: ops, message: Started, on_start: true}\n"
    )
    gateway = GatewayServer(tmp_path, text, extra_env=FAST).start()
    try:
        wait_for(first.is_set, "the first start's run")
        (running,) = triggers(gateway)["boot"]["runs"]
        assert running["status"] == "running"
        gateway.kill()
        # Every process stopped longer than the lease ago: the next start is a new one.
        time.sleep(float(FAST["GATEWAY_LEASE_SECONDS"]) + 1)
        gateway.start()

        def both_ended() -> list[dict[str, Any]] | None:
            runs = triggers(gateway)["boot"]["runs"]
            return runs if len(runs) == 2 and runs[0]["status"] == "done" else None

        latest, earlier = wait_for(both_ended, "the second start's run")
        assert latest["reply"] == "Up and running."
        assert earlier["id"] == running["id"] and earlier["status"] == "failed"
        assert earlier["error"] == "the gateway stopped before the run ended"
        # A second process joining the live deployment fires nothing.
        (tmp_path / "second").mkdir()
        joining = GatewayServer(
            tmp_path / "second", text, extra_env=FAST, database_url=gateway.database_url
        )
        joining.start()
        try:
            wait_for(lambda: "trigger_slot_taken" in joining.log(), "the second process's look")
        finally:
            joining.stop()
        assert len(triggers(gateway)["boot"]["runs"]) == 2
        assert len(calls_of(fake, "gpt-start")) == 2
    finally:
        gateway.stop()


# Background tasks


def tool_result(fake: FakeUpstream, model: str) -> str:
    """What the gateway told the model of its last tool call."""
    last = calls_of(fake, model)[-1]
    return [m for m in last.body["messages"] if m["role"] == "tool"][-1]["content"]


def ask_boss(
    server: GatewayServer, fake: FakeUpstream, user: str, tool: tuple[str, dict[str, Any]]
) -> str:
    fake.script(Reply.of_tool_calls(tool), Reply.of_text("Noted."))
    body = {"model": "boss", "messages": [{"role": "user", "content": "Go"}], "user": user}
    response = httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=30)
    assert response.status_code == 200, response.text
    return tool_result(fake, "gpt-boss")


def dispatch(server: GatewayServer, fake: FakeUpstream, user: str, message: str) -> str:
    answer = ask_boss(
        server, fake, user, ("dispatch_task", {"agent": "worker", "message": message})
    )
    return str(json.loads(answer)["task_id"])


def status(server: GatewayServer, fake: FakeUpstream, user: str, task_id: str) -> str:
    return ask_boss(server, fake, user, ("task_status", {"task_id": task_id}))


def test_a_dispatched_task_runs_in_the_background_for_its_user_only(
    server: GatewayServer, fake: FakeUpstream
) -> None:
    task_id = dispatch(server, fake, "alice", "Count to three")
    assert task_id.startswith("task-")

    def finished() -> dict[str, Any] | None:
        answer = json.loads(status(server, fake, "alice", task_id))
        return answer if answer["status"] in ("done", "failed") else None

    assert wait_for(finished, "the task") == {"status": "done", "result": "One, two, three."}
    (worker_call,) = calls_of(fake, "gpt-worker")
    assert worker_call.body["messages"][-1]["content"] == "Count to three"
    # Another user's task is as unknown as one that never existed: the tool's error.
    assert status(server, fake, "mallory", task_id) == f"Error: there is no task {task_id!r}"
    assert status(server, fake, "alice", "task-nope") == "Error: there is no task 'task-nope'"

    # Erasing the user removes their tasks: the id is then unknown to them too.
    erased = httpx.delete(f"{server.url}/admin/users/alice", headers=JSON, timeout=10)
    assert erased.status_code == 200, erased.text
    assert erased.json()["removed"]["tasks"] == 1
    assert status(server, fake, "alice", task_id) == f"Error: there is no task {task_id!r}"


@pytest.mark.slow
def test_queued_and_interrupted_tasks_finish_after_a_sigkill(
    tmp_path: Path, fake: FakeUpstream, receiver: Receiver
) -> None:
    fake.reset()
    hangs = threading.Event()

    def first_worker_call(recorded: Recorded) -> bool:
        if is_model("gpt-worker")(recorded) and not hangs.is_set():
            hangs.set()
            return True
        return False

    # The first task's call hangs (its process is killed meanwhile); later calls answer.
    fake.answer_when(first_worker_call, Reply.of_text("never", delay=120))
    fake.answer_when(is_model("gpt-worker"), Reply.of_text("Finished."))
    text = config(fake, receiver) + "limits: {tasks_concurrency: 1}\n"
    gateway = GatewayServer(tmp_path, text, extra_env=FAST).start()
    try:
        interrupted = dispatch(gateway, fake, "bob", "first")
        wait_for(hangs.is_set, "the first task to start")
        queued = dispatch(gateway, fake, "bob", "second")
        assert json.loads(status(gateway, fake, "bob", interrupted)) == {"status": "running"}
        assert json.loads(status(gateway, fake, "bob", queued)) == {"status": "queued"}
        gateway.kill()
        gateway.start()

        def finished(task_id: str) -> dict[str, Any] | None:
            answer = json.loads(status(gateway, fake, "bob", task_id))
            return answer if answer["status"] in ("done", "failed") else None

        assert wait_for(lambda: finished(queued), "the queued task") == {
            "status": "done",
            "result": "Finished.",
        }
        assert wait_for(lambda: finished(interrupted), "the interrupted task") == {
            "status": "done",
            "result": "Finished.",
        }
    finally:
        gateway.stop()


# Smoke tests


def smoke_tests(server: GatewayServer) -> dict[str, Any]:
    response = httpx.get(f"{server.url}/admin/smoke-tests", headers=JSON, timeout=10)
    assert response.status_code == 200, response.text
    return {test["name"]: test for test in response.json()["data"]}


def test_a_smoke_test_run_from_the_admin_keeps_its_transcript_and_scores(
    server: GatewayServer, fake: FakeUpstream
) -> None:
    started = httpx.post(f"{server.url}/admin/smoke-tests/kind/runs", json={}, timeout=10)
    assert started.status_code == 202, started.text
    run_id = started.json()["id"]
    assert httpx.post(f"{server.url}/admin/smoke-tests/none/runs", json={}).status_code == 404

    def done() -> dict[str, Any] | None:
        runs = {run["id"]: run for run in smoke_tests(server)["kind"]["runs"]}
        run = runs.get(run_id)
        return run if run is not None and run["status"] in ("done", "failed") else None

    run = wait_for(done, "the smoke test's run")
    assert run["status"] == "done", run
    assert run["transcript"] == [
        {"role": "persona", "text": "My order is late.", "conversation": 1},
        {"role": "agent", "text": "You said: My order is late.", "conversation": 1},
        {"role": "persona", "text": "Where is it now?", "conversation": 1},
        {"role": "agent", "text": "You said: Where is it now?", "conversation": 1},
    ]
    assert run["scores"]["quality"]["mean"] == 7
    assert run["scores"]["quality"]["criteria"]["helpful"] == {"score": 8, "reasoning": "Useful."}
    assert run["passed"] is True
    # The persona saw the agent's lines as the user's: the conversation, flipped.
    persona_call = calls_of(fake, "gpt-persona")[-1]
    turns = [
        (m["role"], m["content"]) for m in persona_call.body["messages"] if m["role"] != "system"
    ]
    assert turns == [("assistant", "My order is late."), ("user", "You said: My order is late.")]
    # Charged to the agent as kind smoke, never to a user.
    with sqlite3.connect(server.workdir / "gateway.sqlite3") as database:
        kinds = database.execute(
            "SELECT DISTINCT kind, agent FROM inference_ledgerentry WHERE user_id = 'smoke:kind'"
        ).fetchall()
    assert kinds == [("smoke", "support")]
    page = httpx.get(f"{server.url}/admin/smoke-tests", timeout=10)
    assert page.status_code == 200 and "Where is it now?" in page.text


@pytest.fixture
def page() -> Iterator[Page]:
    with chromium_page() as page:
        yield page


def test_the_pages_list_triggers_and_run_a_smoke_test_to_its_transcript(
    page: Page, server: GatewayServer, fake: FakeUpstream
) -> None:
    fake.answer_when(is_model("gpt-support"), Reply.of_text("It ships today.", delay=1.0))
    page.goto(f"{server.url}/admin/")
    page.get_by_role("navigation").get_by_role("link", name="Triggers").click()
    expect(page.locator("main")).to_contain_text("orders")
    expect(page.locator("main")).to_contain_text("yearly")
    shot(page, "triggers")

    page.get_by_role("navigation").get_by_role("link", name="Smoke tests").click()
    section = page.locator("[data-smoke-test=edge]")
    before = section.locator("details.smoke-run").count()
    section.get_by_role("button", name="Run now").click()

    expect(page).to_have_url(re.compile(r"/admin/smoke-tests$"))
    section = page.locator("[data-smoke-test=edge]")
    expect(section.locator("details.smoke-run")).to_have_count(before + 1)
    newest = section.locator("details.smoke-run").first
    # The page follows the run while it is under way, with no reload.
    expect(newest.locator("summary")).to_contain_text("done", timeout=20_000)
    expect(newest.locator(".transcript")).to_contain_text("It ships today.")
    expect(newest.locator("table.scores")).to_contain_text("Useful.")
    shot(page, "smoke-test-run")


@pytest.mark.parametrize(("name", "code"), [("kind", 0), ("edge", 0), ("strict", 1)])
def test_the_smoke_test_command_exits_1_below_min_score(
    server: GatewayServer, fake: FakeUpstream, name: str, code: int
) -> None:
    result = manage("smoke_test", name, env=server.env)
    assert result.returncode == code, result.stdout + result.stderr
    assert '"mean": 7.0' in result.stdout
    if code:
        assert "below 9.0" in result.stderr


# Schedules across processes


@pytest.mark.slow
def test_each_due_minute_runs_once_across_two_processes_on_postgresql(
    tmp_path: Path, fakes: dict[str, FakeUpstream], postgres_url: str
) -> None:
    fake = fakes["openai"]
    text = (
        provider(fake)
        + """\
agents:
  - {name: ticker, provider: openai, model: gpt-tick, history: false}
triggers:
  - {name: tick, agent: ticker, user: cron, message: "tick {{ due_at }}", schedule: "* * * * *"}
"""
    )
    env = {"GATEWAY_CRON_MINUTE_SECONDS": "2"}
    first = GatewayServer(tmp_path, text, database_url=postgres_url, extra_env=env).start()
    second_dir = tmp_path / "second"
    second_dir.mkdir()
    second = GatewayServer(
        second_dir, None, database_url=postgres_url, config_path=first.config_path, extra_env=env
    ).start()
    try:
        seen = len(calls_of(fake, "gpt-tick"))
        wait_for(lambda: len(calls_of(fake, "gpt-tick")) >= seen + 4, "four minutes", 30)
    finally:
        second.stop()
        first.stop()
    ticks = [call.body["messages"][-1]["content"] for call in calls_of(fake, "gpt-tick")]
    assert len(ticks) == len(set(ticks)), ticks  # no minute twice
    minutes = sorted(ticks)
    assert len(minutes) >= 5
    # Every minute from the first to the last ran: none was skipped either.
    due = [datetime.fromisoformat(tick.removeprefix("tick ")) for tick in minutes]
    assert [later - earlier for earlier, later in itertools.pairwise(due)] == [
        timedelta(minutes=1)
    ] * (len(due) - 1)
    # No process ran a turn without the lease: one run row for each turn.

    with psycopg.connect(postgres_url.replace("postgres://", "postgresql://")) as database:
        rows = database.execute(
            "SELECT slot, status FROM inference_triggerrun WHERE trigger = 'tick'"
        ).fetchall()
    assert sorted(f"tick {slot}" for slot, _ in rows) == minutes
    # Both processes looked at the minutes both were up: one of them found each taken.
    taken = first.log().count("trigger_slot_taken") + second.log().count("trigger_slot_taken")
    assert taken >= 1
