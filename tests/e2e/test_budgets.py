"""Per-user token budgets over rolling windows, enforced by the real server."""

import httpx
import openai
import pytest

from tests.fakes.base import Reply
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.server import GatewayServer


def ask(client: openai.OpenAI, user_id: str, **metadata: str) -> openai.types.chat.ChatCompletion:
    return client.chat.completions.create(
        model="openai-agent",
        messages=[{"role": "user", "content": "Hi"}],
        safety_identifier=user_id,
        metadata=metadata or None,
    )


def test_usage_under_the_cap_is_served_and_reaching_it_is_429(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    openai_fake.script(
        Reply.of_text("a", prompt_tokens=10, completion_tokens=5),
        Reply.of_text("b", prompt_tokens=10, completion_tokens=5),
    )
    ask(client, user_id, tokens_per_hour="30")
    ask(client, user_id, tokens_per_hour="30")

    with pytest.raises(openai.RateLimitError) as raised:
        ask(client, user_id, tokens_per_hour="30", tokens_per_day="1000")

    response = raised.value.response
    retry_after = response.headers["retry-after"]
    assert retry_after.isdigit() and 1 <= int(retry_after) <= 3600
    error = response.json()["error"]
    assert error["type"] == "rate_limit_exceeded"
    assert error["code"] == "rate_limit_exceeded"
    assert "30 tokens used in the last hour" in error["message"] and "cap of 30" in error["message"]
    assert len(openai_fake.requests) == 2


def test_a_zero_cap_refuses_with_the_window_length(client: openai.OpenAI, user_id: str) -> None:
    with pytest.raises(openai.RateLimitError) as raised:
        ask(client, user_id, tokens_per_day="0")
    assert raised.value.response.headers["retry-after"] == "86400"


def test_usage_is_recorded_even_without_caps_and_counts_later(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_text("a", prompt_tokens=40, completion_tokens=10))
    ask(client, user_id)
    with pytest.raises(openai.RateLimitError) as raised:
        ask(client, user_id, tokens_per_month="50")
    assert "50 tokens used in the last month" in raised.value.message


def test_budgets_are_per_user(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_text("a", prompt_tokens=40, completion_tokens=10))
    ask(client, user_id)
    assert ask(client, f"{user_id}-neighbour", tokens_per_hour="50").choices[0].message.content


def test_budget_is_checked_before_the_agent_is_resolved(
    gateway: GatewayServer, user_id: str
) -> None:
    response = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json={
            "model": "no-such-agent",
            "messages": [{"role": "user", "content": "x"}],
            "safety_identifier": user_id,
            "metadata": {"tokens_per_hour": "0"},
        },
    )
    assert response.status_code == 429
    assert response.reason_phrase == "Too Many Requests"
    assert response.headers["retry-after"] == "3600"


def test_streamed_usage_is_billed(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_chunks("x", "y", prompt_tokens=30, completion_tokens=20))
    list(
        client.chat.completions.create(
            model="openai-agent",
            messages=[{"role": "user", "content": "Hi"}],
            safety_identifier=user_id,
            stream=True,
        )
    )
    with pytest.raises(openai.RateLimitError) as raised:
        ask(client, user_id, tokens_per_hour="50")
    assert "50 tokens used" in raised.value.message
