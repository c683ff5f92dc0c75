"""End-to-end on all six provider kinds: the same ``openai`` client code, the same answers.

Each test runs once per kind through the real gateway process against that kind's
wire-format fake, and checks both what the client got and what the fake received.
"""

import json
from typing import Any

import openai
import pytest

from tests.fakes.base import FakeUpstream, Reply
from tests.upstreams import FAKE_CLASSES, api_key_of, received

KINDS = list(FAKE_CLASSES)

# Where each wire format sends a chat call (model gemini-model-1 for Gemini).
PATHS = {
    "openai": "/v1/chat/completions",
    "groq": "/v1/chat/completions",
    "deepseek": "/v1/chat/completions",
    "anthropic": "/v1/messages",
    "gemini": "/v1beta/models/gemini-model-1:generateContent",
    "cohere": "/v2/chat",
}
STREAM_PATHS = {**PATHS, "gemini": "/v1beta/models/gemini-model-1:streamGenerateContent"}


@pytest.mark.parametrize("kind", KINDS)
def test_completion_has_openai_shape_and_reaches_provider_in_its_format(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fake = fakes[kind]
    fake.script(Reply.of_text("Hello there", prompt_tokens=12, completion_tokens=3))

    completion = client.chat.completions.create(
        model=f"{kind}-agent",
        messages=[{"role": "user", "content": "Hi"}],
        safety_identifier=user_id,
    )

    assert completion.id.startswith("chatcmpl-")
    assert (completion.object, completion.model) == ("chat.completion", f"{kind}-agent")
    assert len(completion.choices) == 1
    assert completion.choices[0].message.role == "assistant"
    assert completion.choices[0].message.content == "Hello there"
    assert completion.choices[0].finish_reason == "stop"
    assert completion.usage is not None
    usage = completion.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (12, 3, 15)
    sent = fake.last
    assert (sent.method, sent.path) == ("POST", PATHS[kind])
    view = received(kind, sent)
    assert (view.model, view.api_key) == (f"{kind}-model-1", api_key_of(kind))
    assert view.system == f"You are the {kind} agent of ACME."
    assert view.turns == [("user", "Hi")]


def test_anthropic_request_carries_version_default_max_tokens_and_top_level_system(
    client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    client.chat.completions.create(
        model="anthropic-agent",
        messages=[{"role": "user", "content": "Hi"}],
        safety_identifier=user_id,
    )
    client.chat.completions.create(
        model="anthropic-agent",
        messages=[{"role": "user", "content": "Hi"}],
        safety_identifier=user_id,
        max_tokens=50,
        temperature=0.3,
        stop=["END"],
        seed=7,
    )

    first, second = fakes["anthropic"].requests
    assert first.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in first.headers
    assert first.body["max_tokens"] == 4096
    assert first.body["system"] == "You are the anthropic agent of ACME."
    assert all(message["role"] != "system" for message in first.body["messages"])
    assert first.body["messages"][0] == {
        "role": "user",
        "content": [{"type": "text", "text": "Hi"}],
    }
    assert (second.body["max_tokens"], second.body["temperature"]) == (50, 0.3)
    assert second.body["stop_sequences"] == ["END"]
    assert "seed" not in second.body  # the Messages API has no seed


def test_gemini_and_cohere_requests_carry_sampling_in_their_own_names(
    client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    sampling = {"temperature": 0.3, "top_p": 0.9, "max_tokens": 50, "stop": ["END"], "seed": 7}
    for kind in ("gemini", "cohere"):
        client.chat.completions.create(
            model=f"{kind}-agent",
            messages=[{"role": "user", "content": "Hi"}],
            safety_identifier=user_id,
            **sampling,
        )

    gemini = fakes["gemini"].last.body
    assert gemini["generationConfig"] == {
        "temperature": 0.3,
        "topP": 0.9,
        "maxOutputTokens": 50,
        "seed": 7,
        "stopSequences": ["END"],
    }
    assert gemini["systemInstruction"] == {"parts": [{"text": "You are the gemini agent of ACME."}]}
    assert [content["role"] for content in gemini["contents"]] == ["user"]
    cohere = fakes["cohere"].last.body
    assert (cohere["temperature"], cohere["p"], cohere["max_tokens"]) == (0.3, 0.9, 50)
    assert (cohere["stop_sequences"], cohere["seed"], cohere["stream"]) == (["END"], 7, False)
    assert cohere["messages"][0] == {
        "role": "system",
        "content": "You are the cohere agent of ACME.",
    }


@pytest.mark.parametrize("kind", KINDS)
def test_stream_with_include_usage_has_openai_chunk_sequence(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fake = fakes[kind]
    fake.script(Reply.of_chunks("Hel", "lo ", "there", prompt_tokens=9, completion_tokens=4))

    chunks = list(
        client.chat.completions.create(
            model=f"{kind}-agent",
            messages=[{"role": "user", "content": "Hi"}],
            safety_identifier=user_id,
            stream=True,
            stream_options={"include_usage": True},
        )
    )

    assert len({chunk.id for chunk in chunks}) == 1
    assert all(chunk.object == "chat.completion.chunk" for chunk in chunks)
    assert all(chunk.model == f"{kind}-agent" for chunk in chunks)
    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == "Hello there"
    *_, finish, usage_chunk = chunks
    assert finish.choices[0].finish_reason == "stop"
    assert usage_chunk.choices == []
    assert usage_chunk.usage is not None
    assert (usage_chunk.usage.prompt_tokens, usage_chunk.usage.completion_tokens) == (9, 4)
    assert usage_chunk.usage.total_tokens == 13
    sent = fake.last
    assert sent.path == STREAM_PATHS[kind]
    if kind == "gemini":
        assert sent.query == {"alt": ["sse"]}
    else:
        assert sent.body["stream"] is True
    assert received(kind, sent).turns == [("user", "Hi")]


@pytest.mark.parametrize("kind", KINDS)
def test_streamed_replies_keep_the_upstream_connection_for_the_next_call(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    """The fakes stream as the providers do (chunked, the connection kept): a reply read
    only to its last event would close the connection, and every streamed call would
    connect (and shake hands over TLS) again."""
    for text in ("one", "two"):
        replies = client.chat.completions.create(
            model=f"{kind}-agent",
            messages=[{"role": "user", "content": text}],
            safety_identifier=user_id,
            stream=True,
        )
        assert "".join(chunk.choices[0].delta.content or "" for chunk in replies).endswith(text)

    first, second = (sent for sent in fakes[kind].requests if sent.path == STREAM_PATHS[kind])
    assert first.client_port == second.client_port


@pytest.mark.parametrize("kind", KINDS)
def test_system_prompt_orders_preamble_language_then_request_system_messages(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    client.chat.completions.create(
        model=f"{kind}-agent",
        messages=[
            {"role": "system", "content": "Be brief."},
            {"role": "user", "content": "Olá"},
        ],
        safety_identifier=user_id,
        metadata={"language": "pt-BR"},
    )

    view = received(kind, fakes[kind].last)
    preamble, language, own = view.system.split("\n\n")
    assert preamble == f"You are the {kind} agent of ACME."
    assert language.startswith("Always reply in Portuguese (Brazil) (language tag pt-BR)")
    assert own == "Be brief."
    assert view.turns == [("user", "Olá")]


@pytest.mark.parametrize("kind", KINDS)
def test_stored_history_is_inserted_between_system_and_new_messages(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fake = fakes[kind]
    fake.script(Reply.of_text("Nice to meet you, Ana."), Reply.of_text("You are Ana."))

    for question in ("I am Ana.", "Who am I?"):
        client.chat.completions.create(
            model=f"{kind}-agent",
            messages=[{"role": "user", "content": question}],
            safety_identifier=user_id,
        )

    view = received(kind, fake.last)
    assert view.system == f"You are the {kind} agent of ACME."
    assert view.turns == [
        ("user", "I am Ana."),
        ("assistant", "Nice to meet you, Ana."),
        ("user", "Who am I?"),
    ]


def _anthropic(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


def _google(code: int, status: str, message: str, *details: dict[str, Any]) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status, "details": list(details)}}


def _cohere(message: str) -> dict[str, Any]:
    return {"id": "fake-error", "message": message}


def _openai(error_type: str, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": None, "code": None}}


RETRY_17 = {"retry-after": "17"}
GOOGLE_RETRY = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "16.2s"}
GOOGLE_BAD_KEY = {"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID"}
# Real error bodies per wire format (status, body, headers). "{key}" stands for the
# gateway's key, echoed back as some providers do when they reject one.
UPSTREAM_ERRORS: dict[str, dict[str, tuple[int, dict[str, Any], dict[str, str]]]] = {
    "openai": {
        "rate_limit": (429, _openai("requests", "Rate limit reached"), RETRY_17),
        "overload": (503, _openai("server_error", "The engine is currently overloaded"), {}),
        "invalid_key": (401, _openai("invalid_request_error", "Incorrect API key: {key}"), {}),
        "bad_request": (400, _openai("invalid_request_error", "Invalid 'messages'"), {}),
    },
    "anthropic": {
        "rate_limit": (429, _anthropic("rate_limit_error", "Per-minute limit exceeded"), RETRY_17),
        "overload": (529, _anthropic("overloaded_error", "Overloaded"), {}),
        "invalid_key": (401, _anthropic("authentication_error", "invalid x-api-key {key}"), {}),
        "bad_request": (400, _anthropic("invalid_request_error", "messages: bad role"), {}),
    },
    "gemini": {
        "rate_limit": (429, _google(429, "RESOURCE_EXHAUSTED", "Quota exceeded", GOOGLE_RETRY), {}),
        "overload": (503, _google(503, "UNAVAILABLE", "The model is overloaded."), {}),
        "invalid_key": (
            400,
            _google(400, "INVALID_ARGUMENT", "API key not valid: {key}", GOOGLE_BAD_KEY),
            {},
        ),
        "bad_request": (400, _google(400, "INVALID_ARGUMENT", "Invalid value at 'contents'"), {}),
    },
    "cohere": {
        "rate_limit": (429, _cohere("You are using a Trial key, limited to 20 calls"), RETRY_17),
        "overload": (503, _cohere("service unavailable"), {}),
        "invalid_key": (498, _cohere("invalid api token {key}"), {}),
        "bad_request": (400, _cohere("invalid request: messages must not be empty"), {}),
    },
}
WIRE_FORMATS = {"groq": "openai", "deepseek": "openai"}


def upstream_error(kind: str, case: str) -> Reply:
    status, body, headers = UPSTREAM_ERRORS[WIRE_FORMATS.get(kind, kind)][case]
    body = json.loads(json.dumps(body).replace("{key}", api_key_of(kind)))
    return Reply.of_error(status, body, headers=headers)


# case → (status, type, code, Retry-After)
_EXPECTED = {
    "rate_limit": (429, "rate_limit_exceeded", "upstream_rate_limited", "17"),
    "overload": (503, "upstream_error", "upstream_overloaded", None),
    "invalid_key": (502, "upstream_error", "upstream_auth", None),
    "bad_request": (400, "invalid_request_error", "upstream_bad_request", None),
}


@pytest.mark.parametrize("case", list(_EXPECTED))
@pytest.mark.parametrize("kind", KINDS)
def test_upstream_errors_map_to_openai_errors_without_leaking_the_key(
    kind: str, case: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(upstream_error(kind, case))

    with pytest.raises(openai.APIStatusError) as raised:
        client.chat.completions.create(
            model=f"{kind}-agent",
            messages=[{"role": "user", "content": "Hi"}],
            safety_identifier=user_id,
        )

    status, error_type, code, retry_after = _EXPECTED[case]
    response = raised.value.response
    error = response.json()["error"]
    assert response.status_code == status
    assert (error["type"], error["code"]) == (error_type, code)
    assert response.headers.get("retry-after") == retry_after
    assert kind in error["message"]
    assert api_key_of(kind) not in json.dumps(error)


# Frames each fake sends before the first text chunk of a stream.
FRAMES_BEFORE_TEXT = {"anthropic": 3, "gemini": 0, "cohere": 2}


@pytest.mark.parametrize("kind", KINDS)
def test_stream_cut_by_the_provider_ends_with_an_error_frame(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    cut = FRAMES_BEFORE_TEXT.get(kind, 1) + 1
    fakes[kind].script(Reply.of_chunks("one ", "two ", "three", drop_after_chunks=cut))
    stream = client.chat.completions.create(
        model=f"{kind}-agent",
        messages=[{"role": "user", "content": "Count"}],
        safety_identifier=user_id,
        stream=True,
    )

    texts: list[str] = []
    with pytest.raises(openai.APIError) as raised:
        for chunk in stream:
            texts.extend(choice.delta.content or "" for choice in chunk.choices)

    assert "".join(texts) == "one "
    assert raised.value.message == f"{kind} ended the stream before the reply was complete"


def test_anthropic_overload_mid_stream_ends_with_an_overloaded_error_frame(
    client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    overloaded = {"type": "overloaded_error", "message": "Overloaded"}
    fakes["anthropic"].script(Reply.of_chunks("Hel", "lo", error_body=overloaded))
    stream = client.chat.completions.create(
        model="anthropic-agent",
        messages=[{"role": "user", "content": "Hi"}],
        safety_identifier=user_id,
        stream=True,
    )

    texts: list[str] = []
    with pytest.raises(openai.APIError) as raised:
        for chunk in stream:
            texts.extend(choice.delta.content or "" for choice in chunk.choices)

    assert "".join(texts) == "Hello"
    assert raised.value.body == {
        "type": "upstream_error",
        "message": "anthropic is overloaded: Overloaded",
        "code": "upstream_overloaded",
        "param": None,
    }
