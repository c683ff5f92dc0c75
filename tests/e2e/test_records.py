"""The turns' records (ledger rows, history, budget reservations) are all in the database
once their replies are out, whatever stops the server right after a burst: those the
replies waited for, and the ledger rows of stateless turns written behind their replies."""

import sqlite3
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.base import FakeUpstream
from tests.server import GatewayServer
from tests.upstreams import shared_config

TOKENS_PER_CALL = 18  # the fake's default usage: 11 prompt + 7 completion tokens
BURST = 48


@pytest.mark.slow
def test_records_of_a_burst_survive_sigterm(
    tmp_path: Path, upstreams: dict[str, FakeUpstream]
) -> None:
    server = GatewayServer(tmp_path, shared_config(upstreams)).start()
    users = [f"user-{uuid.uuid4().hex[:12]}" for _ in range(4)]

    def stateless(index: int) -> bool:
        return index % 4 == 1

    def ask(index: int) -> int:
        body: dict[str, Any] = {
            "model": "stateless-agent" if stateless(index) else "openai-agent",
            "messages": [{"role": "user", "content": f"question {index}"}],
            "safety_identifier": users[index % len(users)],
        }
        if index % 2:
            body |= {"stream": True, "stream_options": {"include_usage": True}}
        if index % 3 == 0 and not stateless(index):
            body["metadata"] = {"tokens_per_day": "1000000"}
        with httpx.Client(timeout=30) as client:
            response = client.post(f"{server.url}/v1/chat/completions", json=body)
            return response.status_code

    try:
        with ThreadPoolExecutor(16) as pool:
            statuses = list(pool.map(ask, range(BURST)))
    finally:
        server.stop()
    assert statuses == [200] * BURST
    with sqlite3.connect(server.database_url.removeprefix("sqlite:///")) as db:
        rows, billed = db.execute(
            "SELECT COUNT(*), SUM(total_tokens) FROM inference_ledgerentry WHERE kind = 'turn'"
        ).fetchone()
        stored = db.execute("SELECT role, content FROM inference_storedmessage").fetchall()
        reserved = db.execute("SELECT COUNT(*) FROM inference_budgetreservation").fetchone()[0]
    assert (rows, billed) == (BURST, BURST * TOKENS_PER_CALL)
    questions = sorted(content for role, content in stored if role == "user")
    remembered = [index for index in range(BURST) if not stateless(index)]
    assert questions == sorted(f"question {index}" for index in remembered)
    assert sum(role == "assistant" for role, _ in stored) == len(remembered)
    assert reserved == 0
