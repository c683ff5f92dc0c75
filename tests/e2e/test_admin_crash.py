"""``kill -9`` of a gateway in the middle of admin writes never corrupts the config file.

A few times over: writers create agents through one daphne process, the process is
killed at a random moment, and the file on disk must parse and be one of the recorded
revisions; the next start removes any temp file the killed write left behind.
"""

import random
import sqlite3
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agents.yamldoc import parse
from tests.polling import wait_for
from tests.server import GatewayServer

CONFIG = """\
# Written by the crash test.
providers:
  openai: {api_key: sk-crash-test-secret-0123456789}
agents:
  - name: base
    provider: openai
    model: m
"""
WRITERS = 3
KILLS = 2


@pytest.fixture
def server(tmp_path: Path) -> Iterator[GatewayServer]:
    gateway = GatewayServer(tmp_path, CONFIG)
    yield gateway
    gateway.stop()


def revision_texts(server: GatewayServer) -> set[str]:
    database = server.database_url.removeprefix("sqlite:///")
    with sqlite3.connect(database) as connection:
        rows = connection.execute("SELECT text FROM agents_configrevision").fetchall()
    return {text for (text,) in rows}


def temp_files(server: GatewayServer) -> list[Path]:
    return list(server.config_path.parent.glob(f".{server.config_path.name}.*.tmp"))


def write_until_killed(server: GatewayServer, writer: int, stop: threading.Event) -> None:
    with httpx.Client(base_url=f"{server.url}/admin", timeout=10) as client:
        for index in range(10_000):
            if stop.is_set():
                return
            body = {"name": f"w{writer}-{index}-{time.monotonic_ns()}", "provider": "openai"}
            try:
                client.post("/agents", json={**body, "model": "m"})
            except httpx.HTTPError:
                return  # the server is gone


@pytest.mark.slow
def test_kill_9_during_concurrent_writes_leaves_a_recorded_revision_and_no_temp_file(
    server: GatewayServer,
) -> None:
    chance = random.Random(11)
    planted = server.config_path.with_name(f".{server.config_path.name}.planted.tmp")
    for _ in range(KILLS):
        planted.write_text("left by a write that was killed")
        server.start()
        assert temp_files(server) == []  # removed at start
        # The file as it was at start is recorded as a revision.
        wait_for(lambda: revision_texts(server), "the start's revision")
        stop = threading.Event()
        writers = [
            threading.Thread(target=write_until_killed, args=(server, writer, stop))
            for writer in range(WRITERS)
        ]
        for thread in writers:
            thread.start()
        time.sleep(chance.uniform(0.3, 0.8))
        server.kill()
        stop.set()
        for thread in writers:
            thread.join()

        text = server.config_path.read_text()
        assert parse(text)["agents"][0]["name"] == "base"
        assert text in revision_texts(server)
    assert len(parse(server.config_path.read_text())["agents"]) > 1  # writes did land
