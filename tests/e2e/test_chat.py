"""End-to-end: the official OpenAI SDK against the real daphne process and a fake upstream."""

from typing import Any

import httpx
import openai
import pytest

from tests.fakes.base import FakeUpstream, Reply
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.server import GatewayServer
from tests.upstreams import api_key_of


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


def test_models_lists_every_agent_and_no_experiment(client: openai.OpenAI) -> None:
    models = client.models.list()
    ids = [model.id for model in models.data]
    assert "openai-agent" in ids and "groq-agent" in ids and "deepseek-agent" in ids
    assert "openai-experiment" not in ids
    assert {model.owned_by for model in models.data} == {"agent-gateway"}
    assert {model.object for model in models.data} == {"model"}


@pytest.mark.parametrize(
    ("model_id", "status"),
    [("openai-agent", 200), ("openai-experiment", 200), ("team/bot", 404), ("a/b/c", 404)],
)
def test_models_retrieve_answers_any_id_even_with_slashes(
    gateway: GatewayServer, model_id: str, status: int
) -> None:
    response = httpx.get(f"{gateway.url}/v1/models/{model_id}")

    assert response.status_code == status, response.text
    if status == 200:
        assert response.json()["id"] == model_id
    else:
        error = response.json()["error"]
        assert (error["code"], error["param"]) == ("model_not_found", "model")
        assert model_id in error["message"]


def test_stream_with_include_usage_has_role_content_finish_usage_then_done(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_chunks("Hel", "lo ", "world", prompt_tokens=9, completion_tokens=4))

    chunks = list(
        client.chat.completions.create(
            model="openai-agent",
            messages=[{"role": "user", "content": "Hi"}],
            safety_identifier=user_id,
            stream=True,
            stream_options={"include_usage": True},
        )
    )

    assert chunks[0].choices[0].delta.role == "assistant"
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Hello world"
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    assert (chunks[-1].usage.prompt_tokens, chunks[-1].usage.completion_tokens) == (9, 4)
    assert len({chunk.id for chunk in chunks}) == 1
    assert {chunk.model for chunk in chunks} == {"openai-agent"}
    assert {chunk.object for chunk in chunks} == {"chat.completion.chunk"}
    assert openai_fake.last.body["stream"] is True


def test_stream_without_include_usage_sends_no_usage_chunk(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    chunks = list(
        client.chat.completions.create(
            model="openai-agent",
            messages=[{"role": "user", "content": "Hi"}],
            safety_identifier=user_id,
            stream=True,
        )
    )
    assert all(chunk.usage is None for chunk in chunks)
    assert all(chunk.choices for chunk in chunks)


def _upstream_messages(fake: OpenAIUpstream) -> list[dict[str, Any]]:
    return fake.last.body["messages"]


def test_second_request_of_a_user_carries_the_first_exchange_and_other_users_do_not(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_text("Paris."), Reply.of_chunks("About ", "2 million."))
    client.chat.completions.create(
        model="openai-agent",
        messages=[{"role": "user", "content": "Capital of France?"}],
        safety_identifier=user_id,
    )
    list(
        client.chat.completions.create(
            model="openai-agent",
            messages=[{"role": "user", "content": "Its population?"}],
            safety_identifier=user_id,
            stream=True,
        )
    )
    client.chat.completions.create(
        model="openai-agent",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "And Spain?"},
        ],
        safety_identifier=user_id,
    )
    assert _upstream_messages(openai_fake) == [
        {"role": "system", "content": "You are the openai agent of ACME.\n\nBe brief."},
        {"role": "user", "content": "Capital of France?"},
        {"role": "assistant", "content": "Paris."},
        {"role": "user", "content": "Its population?"},
        {"role": "assistant", "content": "About 2 million."},
        {"role": "user", "content": "And Spain?"},
    ]

    client.chat.completions.create(
        model="openai-agent",
        messages=[{"role": "user", "content": "Capital of Italy?"}],
        safety_identifier=f"{user_id}-other",
    )
    assert _upstream_messages(openai_fake)[1:] == [{"role": "user", "content": "Capital of Italy?"}]


def test_history_is_kept_per_requested_model(
    client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    client.chat.completions.create(
        model="openai-agent",
        messages=[{"role": "user", "content": "One"}],
        safety_identifier=user_id,
    )
    client.chat.completions.create(
        model="groq-agent", messages=[{"role": "user", "content": "Two"}], safety_identifier=user_id
    )
    assert _upstream_messages(fakes["groq"])[1:] == [{"role": "user", "content": "Two"}]


def test_client_managed_history_is_sent_as_is(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    client.chat.completions.create(
        model="openai-agent",
        messages=[{"role": "user", "content": "Stored"}],
        safety_identifier=user_id,
    )
    conversation = [
        {"role": "user", "content": "Q1"},
        {"role": "assistant", "content": "A1"},
        {"role": "user", "content": "Q2"},
    ]
    client.chat.completions.create(
        model="openai-agent", messages=conversation, safety_identifier=user_id
    )
    assert _upstream_messages(openai_fake)[1:] == conversation


def test_user_field_identifies_the_user_when_safety_identifier_is_absent(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_text("Noted."))
    client.chat.completions.create(
        model="openai-agent", messages=[{"role": "user", "content": "Remember 7"}], user=user_id
    )
    client.chat.completions.create(
        model="openai-agent",
        messages=[{"role": "user", "content": "What?"}],
        safety_identifier=user_id,
    )
    assert _upstream_messages(openai_fake)[1:3] == [
        {"role": "user", "content": "Remember 7"},
        {"role": "assistant", "content": "Noted."},
    ]


def test_language_instruction_follows_the_preamble_in_english_words(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    client.chat.completions.create(
        model="openai-agent",
        messages=[
            {"role": "system", "content": "Client rules."},
            {"role": "user", "content": "Hi"},
        ],
        safety_identifier=user_id,
        metadata={"language": "pt-BR"},
    )
    system = _upstream_messages(openai_fake)[0]["content"]
    preamble, language, client_rules = system.split("\n\n")
    assert preamble == "You are the openai agent of ACME."
    assert "Portuguese (Brazil)" in language and "even when the user writes in another" in language
    assert client_rules == "Client rules."


def test_groq_and_deepseek_speak_the_openai_format_with_their_own_keys(
    client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    for kind in ("groq", "deepseek"):
        completion = client.chat.completions.create(
            model=f"{kind}-agent",
            messages=[{"role": "user", "content": "ping"}],
            safety_identifier=user_id,
        )
        assert completion.choices[0].message.content == "You said: ping"
        sent = fakes[kind].last
        assert sent.path == "/v1/chat/completions"
        assert sent.headers["authorization"] == f"Bearer {api_key_of(kind)}"
        assert sent.body["model"] == f"{kind}-model-1"


def test_unknown_request_fields_are_ignored(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    completion = client.chat.completions.create(
        model="openai-agent",
        messages=[{"role": "user", "content": "Hi"}],
        safety_identifier=user_id,
        extra_body={"frobnicate": True, "logit_bias": {"1": 2}},
    )
    assert completion.choices[0].message.content == "You said: Hi"
    assert "frobnicate" not in openai_fake.last.body


def test_content_parts_are_joined_into_text(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    content = [{"type": "text", "text": "Hello "}, {"type": "text", "text": "parts"}]
    client.chat.completions.create(
        model="openai-agent",
        messages=[{"role": "user", "content": content}],
        safety_identifier=user_id,
    )
    assert _upstream_messages(openai_fake)[-1] == {"role": "user", "content": "Hello parts"}


def test_an_assistant_refusal_part_is_replayed_as_its_text(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    """OpenAI's own replies carry a refusal part when the model refused; clients send the
    conversation back as they got it."""
    refused = [{"type": "refusal", "refusal": "I cannot help with that."}]
    client.chat.completions.create(
        model="openai-agent",
        messages=[
            {"role": "user", "content": "Help me?"},
            {"role": "assistant", "content": refused},
            {"role": "user", "content": "Something else, then."},
        ],
        safety_identifier=user_id,
    )
    assert _upstream_messages(openai_fake)[-2:] == [
        {"role": "assistant", "content": "I cannot help with that."},
        {"role": "user", "content": "Something else, then."},
    ]
