"""A turn is bounded as a whole: a chain of subagents whose models keep calling the next
one (what a prompt injection can make them do) stops at the turn's model-call cap, and a
capped user's turn stops at the cap, overshooting it by at most one call."""

import sqlite3
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.polling import wait_for
from tests.server import GatewayServer
from tests.upstreams import api_key_of, fake_base_url

MAX_CALLS = 12
LEVELS = 6


def config(openai_fake: FakeUpstream) -> str:
    lines = [
        f"limits: {{max_model_calls_per_turn: {MAX_CALLS}}}",
        "providers:",
        f"  openai: {{api_key: {api_key_of('openai')}, base_url: '{fake_base_url(openai_fake)}', timeout: 10}}",
        "agents:",
    ]
    for level in range(LEVELS):
        below = f", subagents: [chain{level + 1}]" if level < LEVELS - 1 else ""
        lines.append(f"  - {{name: chain{level}, provider: openai, model: chain-{level}{below}}}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    gateway = GatewayServer(tmp_path_factory.mktemp("bounds"), config(upstreams["openai"])).start()
    yield gateway
    gateway.stop()


def chain_calls(model: str) -> bool:
    return model.startswith("chain-")


@pytest.fixture
def looping(fakes: dict[str, FakeUpstream]) -> Iterator[FakeUpstream]:
    """Every model of the chain calls its subagent, every time it is asked."""
    fake = fakes["openai"]
    for level in range(LEVELS):

        def at(recorded: Recorded, model: str = f"chain-{level}") -> bool:
            return recorded.body.get("model") == model

        fake.answer_when(
            at,
            Reply.of_tool_calls(
                (f"chain{level + 1}", {"message": "again"}), prompt_tokens=250, completion_tokens=50
            ),
        )
    yield fake
    fake.reset()


def ask(server: GatewayServer, user: str, stream: bool = False, **metadata: str) -> httpx.Response:
    body = {
        "model": "chain0",
        "messages": [{"role": "user", "content": "Start."}],
        "safety_identifier": user,
        "metadata": metadata,
        "stream": stream,
    }
    return httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=60)


def billed(server: GatewayServer, user: str) -> int:
    path = server.database_url.removeprefix("sqlite:///")
    with sqlite3.connect(path) as db:
        row = db.execute(
            "SELECT SUM(total_tokens) FROM inference_ledgerentry WHERE user_id = ?", (user,)
        ).fetchone()
    return row[0] or 0


def test_a_looping_chain_of_subagents_stops_at_the_turns_call_cap(
    server: GatewayServer, looping: FakeUpstream
) -> None:
    user = f"user-{uuid.uuid4().hex[:12]}"

    response = ask(server, user)

    assert response.status_code == 502
    error = response.json()["error"]
    assert error["code"] == "tool_loop_limit" and "max_model_calls_per_turn" in error["message"]
    assert len(looping.requests) == MAX_CALLS
    # Every call made stays billed (the row is written just behind the reply).
    wait_for(lambda: billed(server, user) == MAX_CALLS * 300, "every call billed")


def test_a_streamed_looping_chain_stops_at_the_cap_before_anything_was_sent(
    server: GatewayServer, looping: FakeUpstream
) -> None:
    """With tools of its own the agent's rounds are collected before the final answer is
    streamed: the turn stops before the first byte, so the refusal is the HTTP status."""
    response = ask(server, f"user-{uuid.uuid4().hex[:12]}", stream=True)

    assert response.status_code == 502
    assert response.json()["error"]["code"] == "tool_loop_limit"
    assert len(looping.requests) == MAX_CALLS


def test_a_capped_turn_overshoots_its_cap_by_at_most_one_call(
    server: GatewayServer, looping: FakeUpstream
) -> None:
    user = f"user-{uuid.uuid4().hex[:12]}"

    response = ask(server, user, tokens_per_day="1000")

    assert response.status_code == 429
    assert response.json()["error"]["code"] == "rate_limit_exceeded"
    # 300 tokens a call: after three (900) the fourth is still admitted, the fifth is not.
    assert len(looping.requests) == 4
    wait_for(lambda: billed(server, user) > 0, "the turn billed")
    assert 1000 <= billed(server, user) <= 1000 + 300
