"""The Responses API, and what real clients send to chat completions,
through the real server with the official SDK."""

import base64
import json
import sqlite3
from dataclasses import replace
from typing import Any

import httpx
import openai
import pytest
from pydantic import BaseModel

from tests.fakes.base import FakeUpstream, Reply
from tests.frameworks import run_client
from tests.polling import wait_for
from tests.server import GatewayServer
from tests.upstreams import FAKE_CLASSES, received, sent_tool_calls_and_results

KINDS = list(FAKE_CLASSES)
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather of a city.",
    "parameters": {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
        "additionalProperties": False,
    },
    "strict": True,
}
PIXEL = base64.b64encode(b"\x89PNG\r\n\x1a\n fake pixel").decode()


class Person(BaseModel):
    name: str
    age: int


# ---- the Responses API -------------------------------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_responses_create_answers_in_the_response_shape(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(Reply.of_text("Hello from Responses", prompt_tokens=9, completion_tokens=4))

    response = client.responses.create(
        model=f"{kind}-agent",
        instructions="Answer briefly.",
        input="Hi",
        safety_identifier=user_id,
        metadata={"language": "en"},
    )

    assert response.id.startswith("resp_") and response.object == "response"
    assert response.status == "completed" and response.model == f"{kind}-agent"
    assert response.output_text == "Hello from Responses"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (9, 4)
    assert response.usage.total_tokens == 13
    sent = received(kind, fakes[kind].last)
    assert "Answer briefly." in sent.system and "English" in sent.system
    assert sent.turns[-1] == ("user", "Hi")


@pytest.mark.parametrize("kind", KINDS)
def test_responses_stream_sends_the_documented_events(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(Reply.of_chunks("Streamed ", "through ", "Responses."))

    with client.responses.stream(
        model=f"{kind}-agent", input="Stream it", safety_identifier=user_id
    ) as stream:
        events = list(stream)
        final = stream.get_final_response()

    kinds = [event.type for event in events]
    assert kinds[:5] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
    ]
    assert kinds[-4:] == [
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.completed",
    ]
    assert [event.sequence_number for event in events] == list(range(len(events)))
    deltas = "".join(event.delta for event in events if event.type == "response.output_text.delta")
    assert deltas == final.output_text == "Streamed through Responses."
    assert final.usage.total_tokens == 18


@pytest.mark.parametrize("kind", KINDS)
def test_responses_parse_validates_into_a_pydantic_model(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(Reply.of_text('{"name": "Ana", "age": 31}'))

    parsed = client.responses.parse(
        model=f"{kind}-agent", input="Who is Ana?", text_format=Person, safety_identifier=user_id
    )

    assert parsed.output_parsed == Person(name="Ana", age=31)


@pytest.mark.parametrize("kind", KINDS)
def test_function_call_round_trip_in_response_items(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fake = fakes[kind]
    fake.script(
        Reply.of_tool_calls(("get_weather", {"city": "Quito"})), Reply.of_text("Cool in Quito.")
    )
    question = [{"role": "user", "content": "Weather in Quito?"}]

    first = client.responses.create(
        model=f"{kind}-agent", input=question, tools=[WEATHER], safety_identifier=user_id
    )
    (call,) = [item for item in first.output if item.type == "function_call"]
    assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Quito"})

    final = client.responses.create(
        model=f"{kind}-agent",
        input=[
            *question,
            *[item.model_dump(exclude_none=True) for item in first.output],
            {"type": "function_call_output", "call_id": call.call_id, "output": "14 °C"},
        ],
        tools=[WEATHER],
        safety_identifier=user_id,
    )

    assert final.output_text == "Cool in Quito."
    calls, results = sent_tool_calls_and_results(kind, fake.last.body)
    assert [(c[0], c[1]) for c in calls] == [(call.call_id, "get_weather")]
    assert results == [(call.call_id, "14 °C")]


@pytest.mark.parametrize("kind", KINDS)
def test_streamed_function_call_arrives_as_items(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(Reply.of_tool_calls(("get_weather", {"city": "Lima"})))

    with client.responses.stream(
        model=f"{kind}-agent", input="Weather in Lima?", tools=[WEATHER], safety_identifier=user_id
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_response()

    assert "response.function_call_arguments.delta" in kinds
    assert "response.function_call_arguments.done" in kinds
    (call,) = final.output
    assert call.type == "function_call" and json.loads(call.arguments) == {"city": "Lima"}


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        (
            {"previous_response_id": "resp_123"},
            "previous_response_id",
            "previous_response_not_found",
        ),
        (
            {"tools": [{"type": "custom", "name": "patch"}]},
            "tools[0].type",
            "unsupported_tool_type",
        ),
        (
            {"input": [{"type": "item_reference", "id": "msg_1"}]},
            "input[0].type",
            "unsupported_item",
        ),
        (
            {
                "input": [
                    {
                        "role": "user",
                        "content": [
                            {"type": "input_audio", "input_audio": {"data": "", "format": "wav"}}
                        ],
                    }
                ]
            },
            "input[0].content[0]",
            "unsupported_content_part",
        ),
        (
            {"input": [{"type": "function_call_output", "call_id": "nowhere", "output": "x"}]},
            "input[0].call_id",
            "unknown_tool_call",
        ),
        (
            {"text": {"format": {"type": "json_schema", "schema": {"type": 3}}}},
            "text.format.schema",
            "invalid_json_schema",
        ),
        ({"conversation": "conv_123"}, "conversation", "unsupported_parameter"),
        ({"background": True}, "background", "unsupported_parameter"),
        ({"prompt": {"id": "pmpt_123"}}, "prompt", "unsupported_parameter"),
        (
            {
                "input": [
                    {"role": "user", "content": "Weather?"},
                    {
                        "type": "function_call",
                        "call_id": "c1",
                        "name": "get_weather",
                        "arguments": {"city": "Oslo"},
                    },
                ]
            },
            "input[1].arguments",
            "invalid_item",
        ),
        ({"reasoning": {"effort": "extreme"}}, "reasoning.effort", "unsupported_value"),
        ({"max_output_tokens": 0}, "max_output_tokens", "invalid_type"),
    ],
    ids=[
        "previous-response",
        "built-in-tool",
        "item-type",
        "part-type",
        "orphan-output",
        "bad-schema",
        "conversation",
        "background",
        "prompt",
        "arguments-object",
        "effort",
        "no-output-tokens",
    ],
)
def test_responses_refuses_what_it_cannot_serve_naming_the_field(
    gateway: GatewayServer, openai_fake: FakeUpstream, body: dict[str, Any], param: str, code: str
) -> None:
    request = {"model": "openai-agent", "input": "Hi", "user": "u", **body}
    response = httpx.post(f"{gateway.url}/v1/responses", json=request)

    assert response.status_code == (404 if code.endswith("not_found") else 400), response.text
    assert (response.json()["error"]["param"], response.json()["error"]["code"]) == (param, code)
    assert openai_fake.requests == []


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
@pytest.mark.clients
def test_openai_agents_sdk_in_its_default_responses_mode_finishes_with_a_tool(
    kind: str, gateway: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(
        Reply.of_tool_calls(("get_weather", {"city": "Paris"})), Reply.of_text("Sunny in Paris.")
    )

    outcome = run_client("agents_sdk_responses.py", gateway, f"{kind}-agent", user_id)

    assert outcome == {"output": "Sunny in Paris.", "tool_calls": ["Paris"]}
    _, results = sent_tool_calls_and_results(kind, fakes[kind].last.body)
    assert results[0][1] == "sunny in Paris, 21 C"


# ---- what real clients send to chat completions ----------------------------------------

PARAMETERS = {
    "max_completion_tokens": 300,
    "stop": ["END"],
    "seed": 7,
    "frequency_penalty": 0.5,
    "presence_penalty": 0.25,
    "reasoning_effort": "low",
    "logprobs": True,
    "top_logprobs": 2,
    "logit_bias": {"50256": -100},
    "service_tier": "flex",
    "verbosity": "low",
    "prediction": {"type": "content", "content": "Parameters are"},
    "modalities": ["text"],
}
# What each kind must receive for PARAMETERS (and must not: the keys mapped to None).
EXPECTED_PARAMETERS: dict[str, dict[str, Any]] = {
    "openai": {**PARAMETERS, "max_tokens": None},
    "anthropic": {
        "max_tokens": 300,
        "stop_sequences": ["END"],
        "thinking": None,  # the budget (1024) would not fit under max_tokens 300
        "seed": None,
        "frequency_penalty": None,
        "logit_bias": None,
        "prediction": None,
        "modalities": None,
    },
    "gemini": {
        "generationConfig": {
            "maxOutputTokens": 300,
            "stopSequences": ["END"],
            "seed": 7,
            "frequencyPenalty": 0.5,
            "presencePenalty": 0.25,
            "thinkingConfig": {"thinkingBudget": 1024},
        },
    },
    "cohere": {
        "max_tokens": 300,
        "stop_sequences": ["END"],
        "seed": 7,
        "frequency_penalty": 0.5,
        "presence_penalty": 0.25,
        "logprobs": None,
        "logit_bias": None,
        "reasoning_effort": None,
        "prediction": None,
        "modalities": None,
    },
}
EXPECTED_PARAMETERS["groq"] = EXPECTED_PARAMETERS["deepseek"] = EXPECTED_PARAMETERS["openai"]


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_receives_the_parameters_under_its_own_names(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    client.chat.completions.create(
        model=f"{kind}-agent",
        messages=[{"role": "user", "content": "Parameters?"}],
        safety_identifier=user_id,
        **PARAMETERS,
    )

    body = fakes[kind].last.body
    assert {key: body.get(key) for key in EXPECTED_PARAMETERS[kind]} == EXPECTED_PARAMETERS[kind]


# What each kind must receive from /v1/responses for these (None: must not receive it).
RESPONSES_PARAMETERS = {
    "max_output_tokens": 300,
    "temperature": 0.5,
    "top_p": 0.9,
    "service_tier": "flex",
    "top_logprobs": 2,
    "text": {"verbosity": "low"},
    "reasoning": {"effort": "low"},
}
OPENAI_FORMAT_FROM_RESPONSES = {
    "max_completion_tokens": 300,
    "max_tokens": None,
    "max_output_tokens": None,
    "temperature": 0.5,
    "top_p": 0.9,
    "service_tier": "flex",
    "logprobs": True,
    "top_logprobs": 2,
    "verbosity": "low",
    "reasoning_effort": "low",
    "text": None,
    "reasoning": None,
}
EXPECTED_FROM_RESPONSES: dict[str, dict[str, Any]] = {
    "openai": OPENAI_FORMAT_FROM_RESPONSES,
    "groq": OPENAI_FORMAT_FROM_RESPONSES,
    "deepseek": OPENAI_FORMAT_FROM_RESPONSES,
    "anthropic": {
        "max_tokens": 300,
        "temperature": 0.5,
        "top_p": 0.9,
        "thinking": None,  # the budget (1024) would not fit under max_tokens 300
        "service_tier": None,
        "verbosity": None,
    },
    "gemini": {
        "generationConfig": {
            "maxOutputTokens": 300,
            "temperature": 0.5,
            "topP": 0.9,
            "thinkingConfig": {"thinkingBudget": 1024},
        },
    },
    "cohere": {
        "max_tokens": 300,
        "temperature": 0.5,
        "p": 0.9,
        "logprobs": None,
        "reasoning_effort": None,
        "verbosity": None,
    },
}


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_receives_the_responses_parameters_under_its_own_names(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    client.responses.create(
        model=f"{kind}-agent",
        input="Parameters?",
        safety_identifier=user_id,
        **RESPONSES_PARAMETERS,
    )

    body = fakes[kind].last.body
    expected = EXPECTED_FROM_RESPONSES[kind]
    assert {key: body.get(key) for key in expected} == expected


def test_anthropic_gets_a_thinking_budget_that_fits(
    client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    client.chat.completions.create(
        model="anthropic-agent",
        messages=[{"role": "user", "content": "Think."}],
        reasoning_effort="medium",
        safety_identifier=user_id,
    )

    body = fakes["anthropic"].last.body
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4096}
    assert body["max_tokens"] > 4096


def test_logprobs_come_back_from_openai_format_kinds(
    gateway: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    logprobs = {
        "content": [{"token": "Hi", "logprob": -0.1, "bytes": [72, 105], "top_logprobs": []}]
    }
    reply = Reply.of_text("Hi")
    fakes["groq"].script(
        Reply(
            raw_body={
                **_openai_completion("Hi"),
                "choices": [{**_openai_choice("Hi"), "logprobs": logprobs}],
            }
        )
    )

    answer = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json={
            "model": "groq-agent",
            "messages": [{"role": "user", "content": "Hi"}],
            "logprobs": True,
            "user": user_id,
        },
    ).json()

    assert reply.text == answer["choices"][0]["message"]["content"]
    assert answer["choices"][0]["logprobs"] == logprobs


@pytest.mark.parametrize("api", ["chat", "responses"])
def test_streamed_logprobs_come_back_piece_by_piece(
    api: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes["deepseek"].script(Reply.of_chunks("Hel", "lo"))

    if api == "chat":
        chunks = list(
            client.chat.completions.create(
                model="deepseek-agent",
                messages=[{"role": "user", "content": "Hi"}],
                logprobs=True,
                stream=True,
                safety_identifier=user_id,
            )
        )
        pieces = [
            c.choices[0].logprobs.content for c in chunks if c.choices and c.choices[0].logprobs
        ]
    else:
        with client.responses.stream(
            model="deepseek-agent", input="Hi", top_logprobs=0, safety_identifier=user_id
        ) as stream:
            events = list(stream)
        pieces = [e.logprobs for e in events if e.type == "response.output_text.delta"]
        done = stream.get_final_response().output[0].content[0].logprobs
        assert [token.token for token in done] == ["Hel", "lo"]

    assert [[(t.token, t.logprob) for t in piece] for piece in pieces] == [
        [("Hel", -0.5)],
        [("lo", -0.5)],
    ]


# Usage details each kind reports for 4 cached prompt tokens, 2 written to the cache and
# 3 reasoning tokens (None: the kind does not report it). DeepSeek names cached tokens its
# own way (prompt_cache_hit_tokens); Anthropic counts thinking tokens apart.
USAGE_DETAILS = {
    "openai": (4, None, 3),
    "deepseek": (4, None, 3),
    "anthropic": (4, 2, 3),
    "gemini": (4, None, 3),
    "cohere": (None, None, None),
}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("kind", list(USAGE_DETAILS))
def test_usage_details_pass_through_where_the_provider_reports_them(
    kind: str, stream: bool, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    cached, writes, reasoning = USAGE_DETAILS[kind]
    reply = Reply.of_text("Hi", prompt_tokens=10, completion_tokens=6, cached_tokens=4)
    reply = replace(reply, reasoning_tokens=3, cache_write_tokens=writes or 0)
    fakes[kind].script(reply, reply)
    options: dict[str, Any] = {"model": f"{kind}-agent", "safety_identifier": user_id}

    messages = [{"role": "user", "content": "Hi"}]
    if stream:
        chunks = client.chat.completions.create(
            messages=messages, stream=True, stream_options={"include_usage": True}, **options
        )
        usage = list(chunks)[-1].usage
        with client.responses.stream(input="Hi", **options) as events:
            response_usage = events.get_final_response().usage
    else:
        usage = client.chat.completions.create(messages=messages, **options).usage
        response_usage = client.responses.create(input="Hi", **options).usage

    assert (usage.prompt_tokens, usage.completion_tokens) == (10, 6)
    prompt_details = usage.prompt_tokens_details.model_dump() if usage.prompt_tokens_details else {}
    assert prompt_details.get("cached_tokens") == cached
    assert prompt_details.get("cache_write_tokens") == writes
    details = usage.completion_tokens_details
    assert (details and details.reasoning_tokens) == reasoning
    assert response_usage.input_tokens_details.cached_tokens == (cached or 0)
    input_details = response_usage.input_tokens_details.model_dump()
    assert input_details.get("cache_write_tokens", 0) == (writes or 0)
    assert response_usage.output_tokens_details.reasoning_tokens == (reasoning or 0)


def _openai_choice(text: str) -> dict[str, Any]:
    return {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}


def _openai_completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-x",
        "object": "chat.completion",
        "created": 1,
        "model": "m",
        "choices": [_openai_choice(text)],
        "usage": {"prompt_tokens": 3, "completion_tokens": 1, "total_tokens": 4},
    }


IMAGE_URL = "https://example.com/cat.png"
DATA_URI = f"data:image/png;base64,{PIXEL}"
# How each kind carries [text, https image, inline image] in the user's turn.
EXPECTED_IMAGES: dict[str, list[dict[str, Any]]] = {
    "openai": [
        {"type": "text", "text": "What is in these?"},
        {"type": "image_url", "image_url": {"url": IMAGE_URL}},
        {"type": "image_url", "image_url": {"url": DATA_URI}},
    ],
    "anthropic": [
        {"type": "text", "text": "What is in these?"},
        {"type": "image", "source": {"type": "url", "url": IMAGE_URL}},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": PIXEL}},
    ],
    "gemini": [
        {"text": "What is in these?"},
        {"fileData": {"mimeType": "image/png", "fileUri": IMAGE_URL}},
        {"inlineData": {"mimeType": "image/png", "data": PIXEL}},
    ],
}
EXPECTED_IMAGES["groq"] = EXPECTED_IMAGES["deepseek"] = EXPECTED_IMAGES["cohere"] = EXPECTED_IMAGES[
    "openai"
]


@pytest.mark.parametrize("api", ["chat", "responses"])
@pytest.mark.parametrize("kind", KINDS)
def test_image_parts_reach_each_kind_in_its_native_form(
    kind: str,
    api: str,
    client: openai.OpenAI,
    gateway: GatewayServer,
    fakes: dict[str, FakeUpstream],
    user_id: str,
) -> None:
    if api == "chat":
        client.chat.completions.create(
            model=f"{kind}-agent",
            messages=[
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "What is in these?"},
                        {"type": "image_url", "image_url": {"url": IMAGE_URL}},
                        {"type": "image_url", "image_url": {"url": DATA_URI, "detail": "low"}},
                    ],
                }
            ],
            safety_identifier=user_id,
        )
    else:
        client.responses.create(
            model=f"{kind}-agent",
            input=[
                {
                    "role": "user",
                    "content": [
                        {"type": "input_text", "text": "What is in these?"},
                        {"type": "input_image", "image_url": IMAGE_URL, "detail": "auto"},
                        {"type": "input_image", "image_url": DATA_URI, "detail": "low"},
                    ],
                }
            ],
            safety_identifier=user_id,
        )

    body = fakes[kind].last.body
    if kind == "anthropic":
        sent = body["messages"][-1]["content"]
    elif kind == "gemini":
        sent = body["contents"][-1]["parts"]
    else:
        sent = body["messages"][-1]["content"]
    assert sent == EXPECTED_IMAGES[kind]
    stored = _stored(gateway, user_id)
    assert stored[0] == ("user", "What is in these?[image][image]")


@pytest.mark.parametrize(
    ("part", "param"),
    [
        (
            {"type": "input_audio", "input_audio": {"data": "x", "format": "wav"}},
            "messages[0].content[1]",
        ),
        ({"type": "file", "file": {"file_id": "f"}}, "messages[0].content[1]"),
        (
            {"type": "image_url", "image_url": {"url": "ftp://example.com/a.png"}},
            "messages[0].content[1].image_url.url",
        ),
    ],
    ids=["audio", "file", "not-https"],
)
def test_unsupported_content_parts_are_400_naming_the_part(
    gateway: GatewayServer, openai_fake: FakeUpstream, part: dict[str, Any], param: str
) -> None:
    content = [{"type": "text", "text": "Hear this"}, part]
    response = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json={
            "model": "openai-agent",
            "messages": [{"role": "user", "content": content}],
            "user": "u",
        },
    )

    assert response.status_code == 400
    assert response.json()["error"]["param"] == param
    assert openai_fake.requests == []


@pytest.mark.parametrize(
    ("path", "message", "param"),
    [
        (
            "chat/completions",
            {"role": "system", "content": [{"type": "image_url", "image_url": {"url": IMAGE_URL}}]},
            "messages[0].content[0]",
        ),
        (
            "chat/completions",
            {"role": "developer", "content": [{"type": "file", "file": {"file_id": "f"}}]},
            "messages[0].content[0]",
        ),
        (
            "chat/completions",
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Look:"},
                    {"type": "input_audio", "input_audio": {"data": "x", "format": "wav"}},
                ],
            },
            "messages[0].content[1]",
        ),
        (
            "chat/completions",
            {
                "role": "tool",
                "tool_call_id": "c",
                "content": [{"type": "image_url", "image_url": {"url": IMAGE_URL}}],
            },
            "messages[0].content[0]",
        ),
        (
            "responses",
            {"role": "system", "content": [{"type": "input_image", "image_url": IMAGE_URL}]},
            "input[0].content[0]",
        ),
        (
            "responses",
            {
                "role": "assistant",
                "content": [
                    {"type": "output_text", "text": "See"},
                    {"type": "input_image", "image_url": IMAGE_URL},
                ],
            },
            "input[0].content[1]",
        ),
    ],
    ids=[
        "system-image",
        "developer-file",
        "assistant-audio",
        "tool-image",
        "item-system",
        "item-assistant",
    ],
)
def test_non_text_parts_outside_user_messages_are_400_naming_the_part(
    gateway: GatewayServer,
    openai_fake: FakeUpstream,
    path: str,
    message: dict[str, Any],
    param: str,
) -> None:
    user = {"role": "user", "content": "Hi"}
    field = "messages" if path == "chat/completions" else "input"
    response = httpx.post(
        f"{gateway.url}/v1/{path}",
        json={"model": "openai-agent", field: [message, user], "user": "u"},
    )

    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["param"], error["code"]) == (param, "unsupported_content_part")
    assert openai_fake.requests == []


def test_more_than_one_choice_is_400(gateway: GatewayServer) -> None:
    response = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json={
            "model": "openai-agent",
            "messages": [{"role": "user", "content": "x"}],
            "user": "u",
            "n": 2,
        },
    )

    assert response.status_code == 400 and response.json()["error"]["param"] == "n"


def _stored(gateway: GatewayServer, user: str) -> list[tuple[str, str]]:
    with sqlite3.connect(gateway.workdir / "gateway.sqlite3") as database:
        return database.execute(
            "SELECT role, content FROM inference_storedmessage WHERE user_id = ? ORDER BY id",
            (user,),
        ).fetchall()


def test_x_user_id_names_the_user_after_the_body_fields(
    gateway: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    url = f"{gateway.url}/v1/chat/completions"
    body = {"model": "openai-agent", "messages": [{"role": "user", "content": "Who am I?"}]}

    httpx.post(url, json=body, headers={"X-User-Id": user_id})
    httpx.post(url, json={**body, "user": f"{user_id}-body"}, headers={"X-User-Id": user_id})

    assert len(_stored(gateway, user_id)) == 2
    assert len(_stored(gateway, f"{user_id}-body")) == 2


def test_x_user_id_names_the_user_only_after_safety_identifier(
    gateway: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json={
            "model": "openai-agent",
            "messages": [{"role": "user", "content": "Who am I?"}],
            "safety_identifier": user_id,
            "user": f"{user_id}-user",
        },
        headers={"X-User-Id": f"{user_id}-header"},
    )

    assert len(_stored(gateway, user_id)) == 2
    assert _stored(gateway, f"{user_id}-user") == _stored(gateway, f"{user_id}-header") == []


def test_metadata_history_off_neither_replays_nor_stores_but_bills(
    client: openai.OpenAI, gateway: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    client.chat.completions.create(
        model="openai-agent",
        messages=[{"role": "user", "content": "Remember me"}],
        safety_identifier=user_id,
    )
    client.chat.completions.create(
        model="openai-agent",
        messages=[{"role": "user", "content": "One-shot"}],
        safety_identifier=user_id,
        metadata={"history": "off"},
    )

    assert received("openai", fakes["openai"].last).turns == [("user", "One-shot")]
    assert _stored(gateway, user_id) == [
        ("user", "Remember me"),
        ("assistant", "You said: Remember me"),
    ]

    def billed() -> int:
        with sqlite3.connect(gateway.workdir / "gateway.sqlite3") as database:
            query = "SELECT COUNT(*) FROM inference_ledgerentry WHERE kind = 'turn' AND user_id = ?"
            return database.execute(query, (user_id,)).fetchone()[0]

    # The stateless turn's ledger row is written behind its reply.
    wait_for(lambda: billed() == 2, "both turns billed")


def test_metadata_history_takes_only_on_or_off(gateway: GatewayServer) -> None:
    response = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json={
            "model": "openai-agent",
            "messages": [{"role": "user", "content": "x"}],
            "user": "u",
            "metadata": {"history": "no"},
        },
    )

    assert response.status_code == 400 and response.json()["error"]["param"] == "metadata.history"


def test_agent_without_history_neither_replays_nor_stores(
    client: openai.OpenAI, gateway: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    for text in ("First", "Second"):
        client.chat.completions.create(
            model="stateless-agent",
            messages=[{"role": "user", "content": text}],
            safety_identifier=user_id,
        )

    assert received("openai", fakes["openai"].last).turns == [("user", "Second")]
    assert _stored(gateway, user_id) == []


def test_reasoning_effort_none_is_accepted_as_on_chat_completions(
    gateway: GatewayServer, openai_fake: FakeUpstream
) -> None:
    request = {"model": "openai-agent", "input": "Hi", "user": "u", "reasoning": {"effort": "none"}}
    response = httpx.post(f"{gateway.url}/v1/responses", json=request)

    assert response.status_code == 200, response.text
    assert openai_fake.last.body["reasoning_effort"] == "none"
