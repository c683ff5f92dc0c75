"""A reply waits for its records only when a later request reads them (issue 12): the
ledger row of a turn with no history, no tool round and no budget is written behind the
reply, and still lands, at shutdown too. And a budget reservation made for a client
that left while its budget check waited is released, not held until it expires.

The tests hold SQLite's write lock from outside the gateway (``BEGIN IMMEDIATE`` on its
database file), so its writes cannot commit until they let go: a reply that arrives
meanwhile did not wait for its record."""

import sqlite3
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.fakes.base import FakeUpstream
from tests.polling import wait_for
from tests.server import GatewayServer
from tests.upstreams import api_key_of, fake_base_url


def config(openai_fake: FakeUpstream) -> str:
    return (
        f"providers: {{openai: {{api_key: {api_key_of('openai')}, "
        f"base_url: '{fake_base_url(openai_fake)}'}}}}\n"
        "agents:\n"
        "  - {name: stateless, provider: openai, model: m, history: false}\n"
        "  - {name: remembering, provider: openai, model: m}\n"
    )


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    gateway = GatewayServer(tmp_path_factory.mktemp("write-behind"), config(upstreams["openai"]))
    gateway.start()
    yield gateway
    gateway.stop()


@pytest.fixture
def stopped_server(
    tmp_path_factory: pytest.TempPathFactory, fakes: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    """A gateway of the test's own, which the test stops."""
    gateway = GatewayServer(tmp_path_factory.mktemp("write-behind"), config(fakes["openai"]))
    gateway.start()
    yield gateway
    gateway.stop()


def database(server: GatewayServer) -> Path:
    return server.workdir / "gateway.sqlite3"


@contextmanager
def write_lock(server: GatewayServer) -> Iterator[None]:
    """SQLite's write lock on the gateway's database, held by another connection."""
    holder = sqlite3.connect(database(server), isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        yield
        holder.execute("ROLLBACK")
    finally:
        holder.close()


def ledger(server: GatewayServer) -> set[str]:
    with sqlite3.connect(database(server)) as connection:
        rows = connection.execute("SELECT completion_id FROM inference_ledgerentry")
        return {completion_id for (completion_id,) in rows}


def ask(server: GatewayServer, model: str, timeout: float) -> Any:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0, timeout=timeout)
    return client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "Hello?"}], safety_identifier="u1"
    )


def test_a_reply_waits_only_for_records_a_later_request_reads(server: GatewayServer) -> None:
    ask(server, "stateless", timeout=10)  # tables made, connections open
    with write_lock(server):
        # A reply that waited for its record would come once SQLite gave up waiting for
        # the lock (5 s), its record never written and logged as such.
        behind = ask(server, "stateless", timeout=30)
        assert behind.id not in ledger(server)
        # History must be in the database before the reply: the next turn replays it.
        with pytest.raises(openai.APITimeoutError):
            ask(server, "remembering", timeout=1)
    wait_for(lambda: behind.id in ledger(server), "the ledger row written behind the reply")

    def history() -> list[tuple[str, str]]:
        with sqlite3.connect(database(server)) as connection:
            return connection.execute(
                "SELECT model, role FROM inference_storedmessage WHERE user_id = 'u1'"
            ).fetchall()

    # The turn whose client gave up is written once the lock is gone, in its own group.
    wait_for(history, "the remembering turn's history")
    assert history() == [("remembering", "user"), ("remembering", "assistant")]
    assert "could not record" not in server.log()


def test_records_queued_behind_replies_are_written_at_shutdown(
    stopped_server: GatewayServer,
) -> None:
    ask(stopped_server, "stateless", timeout=10)
    with write_lock(stopped_server):
        behind = [ask(stopped_server, "stateless", timeout=30).id for _ in range(3)]
        # SIGTERM is sent while the lock still holds every queued record back, so each
        # was acknowledged and not yet written when the server was told to stop. The
        # pause gives the shutdown a head start on the lock's release (daphne keeps its
        # socket open while it stops, so there is nothing to watch for instead).
        stopping = threading.Thread(target=stopped_server.stop)
        stopping.start()
        time.sleep(1)
    stopping.join()
    assert set(behind) <= ledger(stopped_server), stopped_server.log()[-3000:]


def test_a_reservation_made_for_a_client_that_left_is_released(server: GatewayServer) -> None:
    ask(server, "stateless", timeout=10)
    body = {
        "model": "stateless",
        "messages": [{"role": "user", "content": "Hello?"}],
        "safety_identifier": "leaving",
        "metadata": {"tokens_per_day": "1000000"},
    }
    # The budget check waits for the lock; the client gives up (disconnects) meanwhile.
    with write_lock(server), pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=1)

    def made_and_released() -> bool:
        with sqlite3.connect(database(server)) as connection:
            made = connection.execute(
                "SELECT seq FROM sqlite_sequence WHERE name = 'inference_budgetreservation'"
            ).fetchall()
            held = connection.execute("SELECT COUNT(*) FROM inference_budgetreservation")
            return made == [(1,)] and held.fetchone() == (0,)

    # Made once the lock was released, for nobody: released then, not held until it expires.
    wait_for(made_and_released, "the reservation to be made and released")
