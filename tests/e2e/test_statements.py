"""The database work of a turn, counted in the serving process: the gateway's ASGI
application with the production config of the benchmarks (history replay, a price, a
minted key per user, the trace store, two deployments), served in a process of its own
by ``bench.features.statements``, which counts every statement and health check of the
database threads and every call to them."""

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import psycopg

from tests.fakes.openai_upstream import OpenAIUpstream
from tests.server import PROJECT_DIR, GatewayServer

TURNS = 10
TURN_KINDS = (
    "json",
    "stream",
    "appended",
    "first",
    "json, 2000 turns stored",
)


def counted(database_url: str | None = None) -> dict[str, Any]:
    command = [sys.executable, "-m", "bench.features.statements", "--requests", str(TURNS)]
    command += ["--json", *(["--database-url", database_url] if database_url else [])]
    done = subprocess.run(
        command,
        cwd=PROJECT_DIR,
        env={**os.environ, "PYTHONPATH": str(PROJECT_DIR)},
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    results: dict[str, Any] = json.loads(done.stdout.splitlines()[-1])
    return results


def assert_each_turn_reads_and_writes_once(results: dict[str, Any]) -> None:
    """Whatever happened to the conversation since (nothing; another worker appended a
    turn; never read here; 4,000 rows stored), a turn reads its history in one statement
    and writes its ledger row and history rows in one statement each; with the erasure
    check and BEGIN (or PostgreSQL's erasure lock), five statements in two calls to the
    database threads, on connections not checked again before each call. The key's
    lookup, the group of request records (each once a second) and the background work's
    polls may fall within the turns counted: the totals leave them room."""
    for kind in TURN_KINDS:
        turn = results[kind]
        statements = turn["by_statement"]
        assert statements["SELECT inference_storedmessage"] == 1, (kind, turn)
        assert statements["INSERT inference_storedmessage"] == 1, (kind, turn)
        assert statements["INSERT inference_ledgerentry"] == 1, (kind, turn)
        assert turn["statements"] <= 6, (kind, turn)
        assert turn["calls"] <= 2.5, (kind, turn)
        assert turn["health_checks"] <= 0.5, (kind, turn)
    for kind in ("json, a key with limits", "json, caps per hour and day"):
        limited = results[kind]
        statements = limited["by_statement"]
        # The usage (the reservations and the ledger rows) in one statement; the
        # reservation made before the call, deleted with expired ones as the turn settles.
        assert "SELECT inference_ledgerentry" not in statements, (kind, limited)
        assert statements["SELECT inference_budgetreservation"] == 1, (kind, limited)
        assert statements["INSERT inference_budgetreservation"] == 1, (kind, limited)
        assert statements["DELETE inference_budgetreservation"] == 1, (kind, limited)
        assert limited["statements"] <= 10, (kind, limited)
        assert limited["calls"] <= 2.5, (kind, limited)


def test_a_turn_makes_five_statements_in_two_database_calls() -> None:
    assert_each_turn_reads_and_writes_once(counted())


def test_a_turn_makes_five_statements_in_two_database_calls_on_postgresql(
    postgres_url: str,
) -> None:
    assert_each_turn_reads_and_writes_once(counted(postgres_url))


def test_connections_the_database_dropped_while_idle_are_replaced_before_use(
    tmp_path: Path, openai_fake: OpenAIUpstream, postgres_url: str
) -> None:
    """A connection is checked before use once it sat idle for a second, not before
    every call: after the server dropped them all, the next requests are answered."""
    config = (
        f"providers:\n  openai: {{api_key: sk-test, base_url: '{openai_fake.base_url}'}}\n"
        "agents:\n  - {name: assistant, provider: openai, model: m}\n"
    )
    server = GatewayServer(tmp_path, config, database_url=postgres_url).start()
    try:

        def ask() -> int:
            body = {
                "model": "assistant",
                "messages": [{"role": "user", "content": "Hi"}],
                "safety_identifier": "ada",
            }
            return httpx.post(
                f"{server.url}/v1/chat/completions", json=body, timeout=30
            ).status_code

        assert [ask() for _ in range(6)] == [200] * 6
        database = postgres_url.rsplit("/", 1)[1]
        with psycopg.connect("postgresql://postgres@127.0.0.1:5432/postgres") as admin:
            dropped = admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = %s",
                [database],
            ).fetchall()
        assert dropped
        time.sleep(1.2)

        assert [ask() for _ in range(6)] == [200] * 6
    finally:
        server.stop()
