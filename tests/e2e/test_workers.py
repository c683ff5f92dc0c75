"""``serve --workers 2``: two daphne processes on one port share budgets and history
through the database, and the supervisor stops them together."""

import json
import os
import signal
import sqlite3
import threading
import time
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import psutil
import pytest

from inference.ledger.writer import DEFER_SECONDS
from tests.fakes.base import FakeUpstream, Reply
from tests.polling import wait_for
from tests.server import GatewayServer
from tests.upstreams import shared_config

TOKENS_PER_CALL = 18  # the fake's default usage: 11 prompt + 7 completion tokens
REQUESTS = 24


@pytest.fixture(scope="module")
def workers(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    server = GatewayServer(
        tmp_path_factory.mktemp("workers"), shared_config(upstreams), workers=2
    ).start()
    yield server
    server.stop()


def ask(server: GatewayServer, user: str, text: str, **metadata: str) -> httpx.Response:
    """One request on a connection of its own, so either worker may take it."""
    body = {
        "model": "openai-agent",
        "messages": [{"role": "user", "content": text}],
        "safety_identifier": user,
        "metadata": metadata,
    }
    return httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=30)


def ask_on_each_worker(
    server: GatewayServer, user: str, texts: list[str], **metadata: str
) -> list[httpx.Response]:
    """``texts`` asked concurrently, half of them while only the first worker accepts and
    half while only the second does: both serve, however the kernel spreads connections."""
    half = len(texts) // 2
    responses: list[httpx.Response] = []
    for worker, share in zip(server.worker_pids(), (texts[:half], texts[half:]), strict=True):
        # A worker paused in the middle of writing its deferred records (request records
        # are written up to a second after their requests) would hold SQLite's write lock
        # through the other's turn: let the last turn's writes end first.
        time.sleep(DEFER_SECONDS + 0.5)
        with server.only(worker), ThreadPoolExecutor(4) as pool:
            responses += pool.map(lambda text: ask(server, user, text, **metadata), share)
    return responses


def serving_pids(server: GatewayServer, user: str, status: int | None = None) -> set[int]:
    """The workers that answered ``user`` (with ``status``, when given)."""
    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    return {
        line["pid"]
        for line in lines
        if line.get("event") == "request"
        and line["user"] == user
        and status in (None, line["status"])
    }


def database(server: GatewayServer) -> sqlite3.Connection:
    return sqlite3.connect(server.database_url.removeprefix("sqlite:///"))


def test_workers_share_history_and_ledger_exactly(
    workers: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    user = f"user-{uuid.uuid4().hex[:12]}"
    texts = [f"question {index}" for index in range(REQUESTS)]
    half = REQUESTS // 2
    responses = ask_on_each_worker(workers, user, texts[:half])
    with ThreadPoolExecutor(8) as pool:  # and both at once, as the kernel spreads them
        responses += pool.map(lambda text: ask(workers, user, text), texts[half:])
    assert [response.status_code for response in responses] == [200] * REQUESTS
    assert serving_pids(workers, user) == set(workers.worker_pids())
    with database(workers) as db:
        stored = db.execute(
            "SELECT role, content FROM inference_storedmessage WHERE user_id = ?", (user,)
        ).fetchall()
        rows, billed = db.execute(
            "SELECT COUNT(*), SUM(total_tokens) FROM inference_ledgerentry WHERE user_id = ?",
            (user,),
        ).fetchone()
    assert sorted(content for role, content in stored if role == "user") == sorted(texts)
    assert sorted(content for role, content in stored if role == "assistant") == sorted(
        f"You said: {text}" for text in texts
    )
    assert (rows, billed) == (REQUESTS, REQUESTS * TOKENS_PER_CALL)
    replay = ask(workers, user, "the last question")
    assert replay.status_code == 200
    sent = fakes["openai"].last.body["messages"]
    replayed = [message["content"] for message in sent if message["role"] == "user"]
    assert sorted(replayed[:-1]) == sorted(texts)


def test_workers_replay_each_others_replies_from_their_history_caches(
    workers: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    """Each worker keeps the conversations it serves in memory; a reply written through
    one is replayed by the other on the user's next request, and a worker's own replies
    too (from its cache)."""
    user = f"user-{uuid.uuid4().hex[:12]}"
    first, second = workers.worker_pids()
    asked: list[str] = []
    for index, worker in enumerate([first, second, first, first, second, second, first]):
        time.sleep(DEFER_SECONDS + 0.5)  # no deferred write holds SQLite's lock (above)
        with workers.only(worker):
            response = ask(workers, user, f"turn {index}")
        assert response.status_code == 200, response.text
        sent = fakes["openai"].last.body["messages"]
        assert [m["content"] for m in sent if m["role"] == "user"] == [*asked, f"turn {index}"]
        assert [m["content"] for m in sent if m["role"] == "assistant"] == [
            f"You said: {text}" for text in asked
        ]
        asked.append(f"turn {index}")
    assert serving_pids(workers, user) == {first, second}


def test_workers_keep_a_budget_exact_turn_by_turn(workers: GatewayServer) -> None:
    """Requests alternating between the workers, each after the last was answered: the
    cap admits exactly its share, on whichever worker the request lands."""
    user = f"user-{uuid.uuid4().hex[:12]}"
    cap = str(5 * TOKENS_PER_CALL)
    statuses = []
    for index, worker in enumerate(workers.worker_pids() * 4):
        time.sleep(DEFER_SECONDS + 0.5)
        with workers.only(worker):
            statuses.append(ask(workers, user, f"q{index}", tokens_per_day=cap).status_code)
    assert statuses == [200] * 5 + [429] * 3
    with database(workers) as db:
        billed = db.execute(
            "SELECT SUM(total_tokens) FROM inference_ledgerentry WHERE user_id = ?", (user,)
        ).fetchone()[0]
    assert billed == 5 * TOKENS_PER_CALL


def test_workers_both_refuse_a_user_at_the_cap(workers: GatewayServer) -> None:
    user = f"user-{uuid.uuid4().hex[:12]}"
    with ThreadPoolExecutor(4) as pool:
        list(pool.map(lambda index: ask(workers, user, f"q{index}"), range(8)))
    cap = str(8 * TOKENS_PER_CALL)
    refusals = ask_on_each_worker(workers, user, ["over"] * 12, tokens_per_day=cap)
    assert [response.status_code for response in refusals] == [429] * 12
    assert serving_pids(workers, user, status=429) == set(workers.worker_pids())
    with database(workers) as db:
        billed = db.execute(
            "SELECT SUM(total_tokens) FROM inference_ledgerentry WHERE user_id = ?", (user,)
        ).fetchone()[0]
    assert billed == 8 * TOKENS_PER_CALL


def test_workers_metrics_add_up_every_worker(workers: GatewayServer) -> None:
    user = f"user-{uuid.uuid4().hex[:12]}"
    labels = {"agent": "openai-agent", "status": "200", "stream": "false"}
    before = workers.metric("gateway_requests_total", **labels)
    ask_on_each_worker(workers, user, [f"q{index}" for index in range(12)])
    assert serving_pids(workers, user) == set(workers.worker_pids())
    assert workers.metric("gateway_requests_total", **labels) == before + 12


def test_workers_a_dead_worker_stops_the_others(
    tmp_path: Path, upstreams: dict[str, FakeUpstream]
) -> None:
    server = GatewayServer(tmp_path, shared_config(upstreams), workers=2).start()
    try:
        supervisor = psutil.Process(server.pid)
        children = supervisor.children()
        assert len(children) == 2
        children[0].send_signal(signal.SIGKILL)
        assert server.wait(timeout=30) == 1
        assert not children[1].is_running()
    finally:
        server.stop()


LOAD_THREADS = 6


class KeptAliveLoad:
    """``LOAD_THREADS`` clients, each on a connection it keeps alive (a new one when it
    is closed), each asking one question after another until stopped: every answer's
    status (or the transport error) by the request id it was sent with."""

    def __init__(self, server: GatewayServer) -> None:
        self.server = server
        self.answers: dict[str, int | str] = {}
        self.stopped = threading.Event()
        self.threads = [threading.Thread(target=self._ask) for _ in range(LOAD_THREADS)]

    def _ask(self) -> None:
        body = {"model": "openai-agent", "messages": [{"role": "user", "content": "hi"}]}
        with httpx.Client(base_url=self.server.url, timeout=30) as client:
            while not self.stopped.is_set():
                request_id = uuid.uuid4().hex
                headers = {"X-Request-ID": request_id, "X-User-Id": "load"}
                try:
                    answer = client.post("/v1/chat/completions", json=body, headers=headers)
                except httpx.TransportError as error:
                    self.answers[request_id] = type(error).__name__
                else:
                    self.answers[request_id] = answer.status_code

    def __enter__(self) -> "KeptAliveLoad":
        for thread in self.threads:
            thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stopped.set()
        for thread in self.threads:
            thread.join()

    def answered(self, status: int) -> list[str]:
        return [key for key, value in list(self.answers.items()) if value == status]


def ready(probes: list[httpx.Client]) -> httpx.Response:
    """The first answer of /readyz that is not a 200, asked again and again on the
    probes' connections, in turn."""
    while True:
        for probe in list(probes):
            answer = probe.get("/readyz")
            if answer.status_code != 200:
                return answer
            if answer.headers.get("connection") == "close":
                probes.remove(probe)


@pytest.mark.slow
def test_workers_a_stopping_worker_takes_no_new_work_and_records_what_it_answered(
    tmp_path: Path, upstreams: dict[str, FakeUpstream], fakes: dict[str, FakeUpstream]
) -> None:
    """``kill -9`` of one worker under keep-alive load: the supervisor stops the other,
    which at once answers /readyz 503 on a connection it had, takes no new connection
    (it answers only what it had in flight), finishes that, and records every request
    it answered; nobody gets a 500 (a provider client closed under a request)."""
    fakes["openai"].answer_when(lambda call: True, Reply.of_text("Slowly.", delay=0.2))
    server = GatewayServer(tmp_path, shared_config(upstreams), workers=2).start()
    try:
        killed, sibling = server.worker_pids()
        # Connections kept to the sibling all along (httpx would drop them idle after 5 s):
        # one answered as the stop begins may close after its 200, the other goes on.
        probes = [
            httpx.Client(base_url=server.url, timeout=30, limits=httpx.Limits(keepalive_expiry=300))
            for _ in range(2)
        ]
        with server.only(sibling):
            assert [probe.get("/readyz").status_code for probe in probes] == [200, 200]
        with KeptAliveLoad(server) as load:
            wait_for(lambda: len(load.answered(200)) >= 4 * LOAD_THREADS, "answers of both")
            os.kill(killed, signal.SIGKILL)
            readiness = ready(probes)
            assert server.wait(timeout=60) == 1
        for probe in probes:
            probe.close()
    finally:
        server.stop()

    assert (readiness.status_code, readiness.json()) == (503, {"status": "stopping"})
    assert readiness.headers["connection"] == "close"
    statuses = set(load.answers.values())
    assert not {status for status in statuses if isinstance(status, int) and status >= 500} - {
        503
    }, statuses
    log = server.log().splitlines()
    noticed = next(index for index, line in enumerate(log) if f"worker {killed} exited" in line)
    after = [json.loads(line) for line in log[noticed:] if line.startswith("{")]
    served_after = [
        line
        for line in after
        if line.get("event") == "request" and line["pid"] == sibling and line["status"] == 200
    ]
    # Only what it had in flight when told to stop (one request per client at most).
    assert len(served_after) <= 2 * LOAD_THREADS, len(served_after)
    # Only the worker killed with -9 may lose the records of its last moment.
    served_by = {
        line["request_id"]: line["pid"]
        for line in (json.loads(text) for text in log if text.startswith("{"))
        if line.get("event") == "request"
    }
    answered = [key for key in load.answered(200) if served_by.get(key) != killed]
    with database(server) as db:
        recorded = {
            row[0]
            for row in db.execute("SELECT request_id FROM inference_requestrecord").fetchall()
        }
    assert answered and [key for key in answered if key not in recorded] == []


def test_workers_sigterm_stops_every_worker(workers: GatewayServer) -> None:
    """Last in the module: it stops the module's server."""
    children = psutil.Process(workers.pid).children()
    assert len(children) == 2
    workers.stop()
    assert workers.wait(timeout=0) == 0
    assert [child.is_running() for child in children] == [False, False]
