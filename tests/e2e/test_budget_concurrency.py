"""Budgets stay exact under concurrency: N concurrent requests against a cap
overshoot it by at most one request's tokens, in one process and across processes."""

import json
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest

from tests.fakes.base import Reply
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.polling import wait_for
from tests.server import GatewayServer

CAP = 100
REQUESTS = 50
TOKENS_PER_REPLY = 18  # the fake's usage below: 11 prompt + 7 completion


def script_slow_replies(fake: OpenAIUpstream) -> None:
    """Every call takes a moment, so the concurrent requests overlap."""
    fake.answer_when(
        lambda recorded: True,
        Reply.of_text("ok", prompt_tokens=11, completion_tokens=7, delay=0.2),
    )


def billed(response: httpx.Response, stream: bool) -> int:
    """The tokens a successful response reports; 0 for a refusal."""
    if response.status_code != 200:
        assert response.status_code == 429, response.text
        assert response.json()["error"]["code"] == "rate_limit_exceeded"
        return 0
    if not stream:
        return response.json()["usage"]["total_tokens"]
    frames = [line[6:] for line in response.text.splitlines() if line.startswith("data: {")]
    usage = [json.loads(frame)["usage"] for frame in frames if '"usage"' in frame]
    return usage[-1]["total_tokens"]


def ask(url: str, user_id: str, stream: bool) -> int:
    body = {
        "model": "openai-agent",
        "messages": [{"role": "user", "content": "Hi"}],
        "safety_identifier": user_id,
        "metadata": {"tokens_per_hour": str(CAP)},
        "stream": stream,
        "stream_options": {"include_usage": True},
    }
    return billed(httpx.post(f"{url}/v1/chat/completions", json=body, timeout=60), stream)


def flood(urls: list[str], user_id: str, stream: bool) -> list[int]:
    with ThreadPoolExecutor(max_workers=REQUESTS) as pool:
        futures = [
            pool.submit(ask, urls[index % len(urls)], user_id, stream) for index in range(REQUESTS)
        ]
        return [future.result() for future in futures]


def assert_within_one_request_of_the_cap(spent: list[int]) -> None:
    served = [tokens for tokens in spent if tokens]
    assert served, "no request was served"
    assert sum(served) <= CAP + TOKENS_PER_REPLY, (len(served), sum(served))
    assert len(served) < REQUESTS


@pytest.mark.parametrize("stream", [False, True], ids=["complete", "stream"])
def test_concurrent_requests_overshoot_the_cap_by_at_most_one_request(
    gateway: GatewayServer, openai_fake: OpenAIUpstream, user_id: str, stream: bool
) -> None:
    script_slow_replies(openai_fake)
    assert_within_one_request_of_the_cap(flood([gateway.url], user_id, stream))


def test_a_refusal_while_requests_are_in_flight_says_tokens_are_reserved(
    gateway: GatewayServer, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    openai_fake.answer_when(lambda recorded: True, Reply.of_text("ok", delay=1.0))
    with ThreadPoolExecutor(max_workers=1) as pool:
        first = pool.submit(ask, gateway.url, user_id, False)
        wait_for(lambda: openai_fake.requests, "the first request to reach the provider")
        body = {
            "model": "openai-agent",
            "messages": [{"role": "user", "content": "Hi"}],
            "safety_identifier": user_id,
            "metadata": {"tokens_per_hour": str(CAP)},
        }
        refused = httpx.post(f"{gateway.url}/v1/chat/completions", json=body, timeout=30)
        assert first.result() == TOKENS_PER_REPLY
    assert refused.status_code == 429, refused.text
    assert "reserved" in refused.json()["error"]["message"]
    assert refused.headers["retry-after"].isdigit()


@pytest.mark.slow
def test_two_processes_on_postgresql_share_the_cap(
    tmp_path: Path, openai_fake: OpenAIUpstream, postgres_url: str
) -> None:
    config = (
        f"providers:\n  openai: {{api_key: sk-budget, base_url: '{openai_fake.base_url}'}}\n"
        "agents:\n  - {name: openai-agent, provider: openai, model: m}\n"
    )
    script_slow_replies(openai_fake)
    first = GatewayServer(tmp_path, config, database_url=postgres_url).start()
    second = GatewayServer(tmp_path, None, database_url=postgres_url).start()
    try:
        for stream in (False, True):
            spent = flood([first.url, second.url], f"user-{uuid.uuid4().hex[:8]}", stream)
            assert_within_one_request_of_the_cap(spent)
    finally:
        first.stop()
        second.stop()
