"""End-to-end: ``response_format`` enforced on all six provider kinds.

The session gateway runs with the default ``structured_output.max_repairs`` of 2.
"""

import json
from typing import Any

import httpx
import openai
import pytest

from tests.fakes.base import FakeUpstream, Reply
from tests.polling import wait_for
from tests.server import GatewayServer
from tests.upstreams import FAKE_CLASSES, received

KINDS = list(FAKE_CLASSES)

SCHEMA = {
    "type": "object",
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
    "required": ["name", "age"],
    "additionalProperties": False,
}
RESPONSE_FORMAT = {
    "type": "json_schema",
    "json_schema": {"name": "person", "schema": SCHEMA, "strict": True},
}
VALID = '{"name": "Ana", "age": 31}'
INVALID = '{"name": "Ana", "age": "thirty-one"}'
QUESTION = "Who is Ana?"


def native_mechanism(kind: str, body: dict[str, Any]) -> Any:
    """The part of the request where each provider's own structured-output feature sits."""
    if kind == "anthropic":
        return body["tool_choice"], body["tools"]
    if kind == "gemini":
        return body["generationConfig"]
    return body["response_format"]


NATIVE = {
    "openai": RESPONSE_FORMAT,
    "anthropic": (
        {"type": "tool", "name": "json_response"},
        [
            {
                "name": "json_response",
                "description": "Give your reply: its input is the JSON value of the reply.",
                "input_schema": SCHEMA,
            }
        ],
    ),
    "gemini": {
        "responseMimeType": "application/json",
        "responseSchema": {
            "type": "OBJECT",
            "properties": {"name": {"type": "STRING"}, "age": {"type": "INTEGER"}},
            "required": ["name", "age"],
        },
    },
    "cohere": {"type": "json_object", "json_schema": SCHEMA},
}


def hour_tokens(gateway: GatewayServer, user_id: str) -> int:
    usage = httpx.get(
        f"{gateway.url}/admin/usage",
        params={"user": user_id},
        headers={"Accept": "application/json"},
        timeout=10,
    )
    tokens: int = usage.json()["windows"]["hour"]
    return tokens


def ask(client: openai.OpenAI, kind: str, user_id: str, **options: Any) -> Any:
    return client.chat.completions.create(
        model=f"{kind}-agent",
        messages=[{"role": "user", "content": QUESTION}],
        safety_identifier=user_id,
        **options,
    )


@pytest.mark.parametrize("kind", KINDS)
def test_valid_reply_passes_and_provider_gets_native_mechanism_and_instruction(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fake = fakes[kind]
    fake.script(Reply.of_text(VALID))

    completion = ask(client, kind, user_id, response_format=RESPONSE_FORMAT)

    assert json.loads(completion.choices[0].message.content) == {"name": "Ana", "age": 31}
    assert completion.choices[0].finish_reason == "stop"
    assert len(fake.requests) == 1
    sent = fake.last
    assert native_mechanism(kind, sent.body) == NATIVE.get(kind, NATIVE["openai"])
    preamble, instruction = received(kind, sent).system.split("\n\n")
    assert preamble == f"You are the {kind} agent of ACME."
    assert instruction.startswith("Reply with a single JSON value that validates against")
    assert json.loads(instruction.split("\n", 1)[1]) == SCHEMA


@pytest.mark.parametrize("kind", KINDS)
def test_json_object_reply_in_a_code_fence_is_unwrapped(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(Reply.of_text(f"```json\n{VALID}\n```"))

    completion = ask(client, kind, user_id, response_format={"type": "json_object"})

    assert completion.choices[0].message.content == VALID
    assert len(fakes[kind].requests) == 1


@pytest.mark.parametrize("kind", KINDS)
def test_invalid_reply_is_repaired_with_summed_usage_and_only_valid_one_stored(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fake = fakes[kind]
    fake.script(
        Reply.of_text(INVALID, prompt_tokens=10, completion_tokens=5),
        Reply.of_text(VALID, prompt_tokens=20, completion_tokens=6),
    )

    completion = ask(client, kind, user_id, response_format=RESPONSE_FORMAT)

    assert completion.choices[0].message.content == VALID
    assert completion.usage is not None
    assert (completion.usage.prompt_tokens, completion.usage.completion_tokens) == (30, 11)
    assert len(fake.requests) == 2
    turns = received(kind, fake.requests[1]).turns
    assert turns[:2] == [("user", QUESTION), ("assistant", INVALID)]
    role, repair = turns[2]
    assert role == "user"
    assert "at age: 'thirty-one' is not of type 'integer'" in repair

    ask(client, kind, user_id)  # plain follow-up: history holds the validated reply only
    assert received(kind, fake.last).turns == [
        ("user", QUESTION),
        ("assistant", VALID),
        ("user", QUESTION),
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_reply_that_never_validates_is_502_after_two_repairs(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fake = fakes[kind]
    fake.script(*[Reply.of_text(INVALID)] * 3)

    with pytest.raises(openai.APIStatusError) as raised:
        ask(client, kind, user_id, response_format=RESPONSE_FORMAT)

    assert raised.value.status_code == 502
    error = raised.value.response.json()["error"]
    assert (error["type"], error["code"]) == ("upstream_error", "structured_output_invalid")
    assert "'thirty-one' is not of type 'integer'" in error["message"]
    assert raised.value.response.headers["x-should-retry"] == "false"
    assert len(fake.requests) == 3


def test_a_reply_that_never_validates_stops_gemini_clients(
    gateway: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    """Gemini CLI retries every 5xx (each retry three billed calls): on Google's dialect
    the failure is ``FAILED_PRECONDITION``, which it does not retry."""
    fakes["openai"].script(*[Reply.of_text(INVALID)] * 3)
    config = {
        "responseMimeType": "application/json",
        "responseSchema": {
            "type": "OBJECT",
            "properties": {"name": {"type": "STRING"}, "age": {"type": "INTEGER"}},
            "required": ["name", "age"],
        },
    }

    refused = httpx.post(
        f"{gateway.url}/v1beta/models/openai-agent:generateContent",
        json={"contents": [{"parts": [{"text": QUESTION}]}], "generationConfig": config},
        headers={"X-User-Id": user_id},
        timeout=30,
    )

    assert refused.status_code == 400, refused.text
    error = refused.json()["error"]
    assert (error["code"], error["status"]) == (400, "FAILED_PRECONDITION")
    assert "'thirty-one' is not of type 'integer'" in error["message"]
    assert refused.headers["x-should-retry"] == "false"
    assert len(fakes["openai"].requests) == 3


@pytest.mark.parametrize("kind", KINDS)
def test_malformed_schema_is_400_before_any_upstream_call(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    malformed = {"type": "json_schema", "json_schema": {"name": "x", "schema": {"type": "objekt"}}}

    with pytest.raises(openai.BadRequestError) as raised:
        ask(client, kind, user_id, response_format=malformed)

    error = raised.value.response.json()["error"]
    assert (error["code"], error["param"]) == (
        "invalid_json_schema",
        "response_format.json_schema.schema",
    )
    assert fakes[kind].requests == []


@pytest.mark.parametrize("kind", KINDS)
def test_stream_sends_only_the_validated_reply(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fake = fakes[kind]
    fake.script(
        Reply.of_text(INVALID, prompt_tokens=10, completion_tokens=5),
        Reply.of_text(VALID, prompt_tokens=20, completion_tokens=6),
    )

    chunks = list(
        ask(
            client,
            kind,
            user_id,
            response_format=RESPONSE_FORMAT,
            stream=True,
            stream_options={"include_usage": True},
        )
    )

    assert chunks[0].choices[0].delta.role == "assistant"
    text = "".join(chunk.choices[0].delta.content or "" for chunk in chunks if chunk.choices)
    assert text == VALID
    *_, finish, usage_chunk = chunks
    assert finish.choices[0].finish_reason == "stop"
    assert usage_chunk.usage is not None
    assert (usage_chunk.usage.prompt_tokens, usage_chunk.usage.completion_tokens) == (30, 11)
    assert len(fake.requests) == 2


@pytest.mark.parametrize("kind", KINDS)
def test_stream_that_never_validates_is_an_http_502_not_a_started_stream(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(*[Reply.of_text(INVALID)] * 3)

    with pytest.raises(openai.APIStatusError) as raised:
        ask(client, kind, user_id, response_format=RESPONSE_FORMAT, stream=True)

    assert raised.value.status_code == 502
    assert raised.value.response.json()["error"]["code"] == "structured_output_invalid"


@pytest.mark.parametrize("kind", KINDS)
def test_tokens_of_replies_that_never_validated_are_still_billed(
    kind: str,
    client: openai.OpenAI,
    gateway: GatewayServer,
    fakes: dict[str, FakeUpstream],
    user_id: str,
) -> None:
    fakes[kind].script(*[Reply.of_text(INVALID, prompt_tokens=10, completion_tokens=5)] * 3)
    with pytest.raises(openai.APIStatusError):
        ask(client, kind, user_id, response_format=RESPONSE_FORMAT)
    # A turn without a cap is answered before its ledger row commits (docs/api.md,
    # "Token budgets"): the row is awaited here, not raced.
    wait_for(lambda: hour_tokens(gateway, user_id) == 45, "the failed turn's ledger row")

    # Three attempts of 15 tokens: a cap of 45 is reached, one of 46 is not.
    with pytest.raises(openai.RateLimitError):
        ask(client, kind, user_id, metadata={"tokens_per_hour": "45"})
    ask(client, kind, user_id, metadata={"tokens_per_hour": "46"})
