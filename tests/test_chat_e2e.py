"""End-to-end: the official OpenAI SDK against the real daphne process and a fake upstream."""

import openai

from tests.conftest import api_key_of
from tests.fakes.base import Reply
from tests.fakes.openai_upstream import OpenAIUpstream


def test_completion_reaches_upstream_with_preamble_and_returns_openai_shape(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_text("Hello there", prompt_tokens=12, completion_tokens=3))

    completion = client.chat.completions.create(
        model="openai-agent",
        messages=[{"role": "user", "content": "Hi"}],
        safety_identifier=user_id,
        temperature=0.3,
        top_p=0.9,
        max_tokens=50,
        stop=["END"],
        seed=7,
    )

    assert completion.id.startswith("chatcmpl-")
    assert completion.object == "chat.completion"
    assert completion.model == "openai-agent"
    assert completion.choices[0].message.content == "Hello there"
    assert completion.choices[0].finish_reason == "stop"
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (12, 3)
    assert completion.usage.total_tokens == 15
    sent = openai_fake.last
    assert sent.path == "/v1/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {api_key_of('openai')}"
    assert sent.body["model"] == "openai-model-1"
    assert sent.body["messages"] == [
        {"role": "system", "content": "You are the openai agent of ACME."},
        {"role": "user", "content": "Hi"},
    ]
    assert (sent.body["temperature"], sent.body["top_p"], sent.body["max_tokens"]) == (0.3, 0.9, 50)
    assert (sent.body["stop"], sent.body["seed"]) == (["END"], 7)
