"""Tool definitions, tool calls and tool results through each provider module.

The module is called directly (a real ``httpx.AsyncClient`` against the kind's fake):
the encoded request is checked against the provider's documented shape, and the tool
calls it decodes, whole and streamed, are fed back for the next turn.
"""

import json
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from agents.schema import ProviderConfig
from inference.neutral.types import (
    ChatRequest,
    ChatResponse,
    Message,
    StreamAccumulator,
    ToolCall,
    ToolChoice,
    ToolSpec,
)
from inference.providers.base import Provider
from inference.providers.registry import PROVIDER_CLASSES
from tests.fakes.base import FakeUpstream, Reply
from tests.fakes.gemini_upstream import thought_signature
from tests.providerstreams import events_of
from tests.upstreams import FAKE_CLASSES, api_key_of, fake_base_url, sent_tool_calls_and_results

KINDS = list(FAKE_CLASSES)

PARAMETERS = {
    "type": "object",
    "properties": {"city": {"type": "string"}},
    "required": ["city"],
}
TOOL = ToolSpec(name="get_weather", description="Current weather of a city.", parameters=PARAMETERS)
QUESTION = "Weather in Paris and Rome, then Berlin and Madrid?"
SIGNATURE = thought_signature(7)  # one the Gemini fake gave earlier
REQUEST = ChatRequest(
    model="model-1",
    system="You are ACME.",
    messages=(
        Message(role="user", content=QUESTION),
        Message(
            role="assistant",
            content="Let me check.",
            tool_calls=(
                ToolCall("call_paris", "get_weather", '{"city": "Paris"}', signature=SIGNATURE),
                ToolCall("call_rome", "get_weather", '{"city": "Rome"}'),
            ),
        ),
        Message(
            role="tool", content='{"celsius": 21}', tool_call_id="call_paris", name="get_weather"
        ),
        Message(role="tool", content="sunny", tool_call_id="call_rome", name="get_weather"),
    ),
    tools=(TOOL,),
)
OPENAI_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Current weather of a city.",
            "parameters": PARAMETERS,
        },
    }
]
OPENAI_CALLS = [
    {
        "id": "call_paris",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    },
    {
        "id": "call_rome",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Rome"}'},
    },
]
OPENAI_WIRE = {
    "tools": OPENAI_TOOLS,
    "messages": [
        {"role": "system", "content": "You are ACME."},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "content": "Let me check.", "tool_calls": OPENAI_CALLS},
        {"role": "tool", "tool_call_id": "call_paris", "content": '{"celsius": 21}'},
        {"role": "tool", "tool_call_id": "call_rome", "content": "sunny"},
    ],
}
# Cohere's v2 is OpenAI's shape, but for the text before the calls: its tool plan.
COHERE_WIRE = {
    "tools": OPENAI_TOOLS,
    "messages": [
        {"role": "system", "content": "You are ACME."},
        {"role": "user", "content": QUESTION},
        {"role": "assistant", "tool_plan": "Let me check.", "tool_calls": OPENAI_CALLS},
        {"role": "tool", "tool_call_id": "call_paris", "content": '{"celsius": 21}'},
        {"role": "tool", "tool_call_id": "call_rome", "content": "sunny"},
    ],
}
# What each wire format must carry for REQUEST (the keys compared; others may be present).
EXPECTED_WIRE: dict[str, dict[str, Any]] = {
    "openai": OPENAI_WIRE,
    "groq": OPENAI_WIRE,
    "deepseek": OPENAI_WIRE,
    "cohere": COHERE_WIRE,
    "anthropic": {
        "system": "You are ACME.",
        "tools": [
            {
                "name": "get_weather",
                "description": "Current weather of a city.",
                "input_schema": PARAMETERS,
            }
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": QUESTION}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me check."},
                    {
                        "type": "tool_use",
                        "id": "call_paris",
                        "name": "get_weather",
                        "input": {"city": "Paris"},
                    },
                    {
                        "type": "tool_use",
                        "id": "call_rome",
                        "name": "get_weather",
                        "input": {"city": "Rome"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "call_paris",
                        "content": '{"celsius": 21}',
                    },
                    {"type": "tool_result", "tool_use_id": "call_rome", "content": "sunny"},
                ],
            },
        ],
    },
    "gemini": {
        "systemInstruction": {"parts": [{"text": "You are ACME."}]},
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Current weather of a city.",
                        "parametersJsonSchema": PARAMETERS,
                    }
                ]
            }
        ],
        "contents": [
            {"role": "user", "parts": [{"text": QUESTION}]},
            {
                "role": "model",
                "parts": [
                    {"text": "Let me check."},
                    {
                        "functionCall": {
                            "id": "call_paris",
                            "name": "get_weather",
                            "args": {"city": "Paris"},
                        },
                        "thoughtSignature": SIGNATURE,
                    },
                    {
                        "functionCall": {
                            "id": "call_rome",
                            "name": "get_weather",
                            "args": {"city": "Rome"},
                        }
                    },
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "id": "call_paris",
                            "name": "get_weather",
                            "response": {"celsius": 21},
                        }
                    },
                    {
                        "functionResponse": {
                            "id": "call_rome",
                            "name": "get_weather",
                            "response": {"result": "sunny"},
                        }
                    },
                ],
            },
        ],
    },
}
NEXT_CALLS = (("get_weather", {"city": "Berlin"}), ("get_weather", {"city": "Madrid"}))


@pytest.fixture
async def http() -> AsyncIterator[httpx.AsyncClient]:
    async with httpx.AsyncClient() as client:
        yield client


def provider_for(kind: str, fakes: dict[str, FakeUpstream], http: httpx.AsyncClient) -> Provider:
    settings = ProviderConfig(api_key=api_key_of(kind), base_url=fake_base_url(fakes[kind]))
    return PROVIDER_CLASSES[kind](kind, kind, http, settings)


async def streamed(provider: Provider, request: ChatRequest) -> ChatResponse:
    accumulator = StreamAccumulator()
    async for event in events_of(provider, request):
        accumulator.add(event)
    return accumulator.response()


def assert_decoded_calls(kind: str, response: ChatResponse) -> None:
    assert response.finish_reason == "tool_calls"
    calls = response.tool_calls
    assert [(call.name, json.loads(call.arguments)) for call in calls] == list(NEXT_CALLS)
    assert all(call.id for call in calls)
    assert len({call.id for call in calls}) == 2
    signatures = [call.signature for call in calls]
    if kind == "gemini":
        assert signatures == [thought_signature(0), thought_signature(1)]
    else:
        assert signatures == [None, None]


@pytest.mark.parametrize("kind", KINDS)
async def test_tools_prior_calls_and_results_encode_in_provider_format(
    kind: str, fakes: dict[str, FakeUpstream], http: httpx.AsyncClient
) -> None:
    fake = fakes[kind]
    fake.script(Reply.of_tool_calls(*NEXT_CALLS), Reply.of_tool_calls(*NEXT_CALLS))
    provider = provider_for(kind, fakes, http)

    whole = await provider.complete(REQUEST)
    pieces = await streamed(provider, REQUEST)

    for sent in fake.requests:
        expected = EXPECTED_WIRE[kind]
        assert {key: sent.body.get(key) for key in expected} == expected
    assert_decoded_calls(kind, whole)
    assert_decoded_calls(kind, pieces)
    assert pieces.usage == whole.usage


@pytest.mark.parametrize("kind", KINDS)
async def test_decoded_tool_calls_go_back_with_their_results(
    kind: str, fakes: dict[str, FakeUpstream], http: httpx.AsyncClient
) -> None:
    fake = fakes[kind]
    fake.script(Reply.of_tool_calls(*NEXT_CALLS), Reply.of_text("Berlin 18°, Madrid 30°."))
    provider = provider_for(kind, fakes, http)
    first = ChatRequest(model="model-1", system="", messages=REQUEST.messages[:1], tools=(TOOL,))

    reply = await streamed(provider, first)
    results = tuple(
        Message(role="tool", content=f"{index * 10}°", tool_call_id=call.id, name=call.name)
        for index, call in enumerate(reply.tool_calls)
    )
    turn = Message(role="assistant", content="", tool_calls=reply.tool_calls)
    final = await provider.complete(
        ChatRequest(
            model="model-1", system="", messages=(*first.messages, turn, *results), tools=(TOOL,)
        )
    )

    assert final.text == "Berlin 18°, Madrid 30°."
    assert final.finish_reason == "stop"
    sent_calls, sent_results = sent_tool_calls_and_results(kind, fake.last.body)
    assert sent_calls == [
        (call.id, call.name, json.loads(call.arguments), call.signature)
        for call in reply.tool_calls
    ]
    assert sent_results == [
        (call.id, f"{index * 10}°") for index, call in enumerate(reply.tool_calls)
    ]


CHOICES = [
    (ToolChoice("required"), False),
    (ToolChoice("required", name="get_weather"), None),
    (ToolChoice("none"), None),
    (ToolChoice("auto"), False),
]
# How each kind says each of CHOICES (the keys compared).
EXPECTED_CHOICE: dict[str, list[dict[str, Any]]] = {
    "openai": [
        {"tool_choice": "required", "parallel_tool_calls": False},
        {"tool_choice": {"type": "function", "function": {"name": "get_weather"}}},
        {"tool_choice": "none"},
        {"tool_choice": "auto", "parallel_tool_calls": False},
    ],
    "anthropic": [
        {"tool_choice": {"type": "any", "disable_parallel_tool_use": True}},
        {"tool_choice": {"type": "tool", "name": "get_weather"}},
        {"tool_choice": {"type": "none"}},
        {"tool_choice": {"type": "auto", "disable_parallel_tool_use": True}},
    ],
    "gemini": [
        {"toolConfig": {"functionCallingConfig": {"mode": "ANY"}}},
        {
            "toolConfig": {
                "functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": ["get_weather"]}
            }
        },
        {"toolConfig": {"functionCallingConfig": {"mode": "NONE"}}},
        {"toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}},
    ],
    "cohere": [
        {"tool_choice": "REQUIRED"},
        {"tool_choice": "REQUIRED", "tools": OPENAI_TOOLS},
        {"tool_choice": "NONE"},
        {"tool_choice": None},
    ],
}
EXPECTED_CHOICE["groq"] = EXPECTED_CHOICE["deepseek"] = EXPECTED_CHOICE["openai"]
OTHER_TOOL = ToolSpec(name="get_time", description="Time in a city.", parameters=PARAMETERS)


@pytest.mark.parametrize("kind", KINDS)
async def test_tool_choice_and_parallel_calls_in_each_providers_terms(
    kind: str, fakes: dict[str, FakeUpstream], http: httpx.AsyncClient
) -> None:
    provider = provider_for(kind, fakes, http)
    first = REQUEST.messages[:1]

    for choice, parallel in CHOICES:
        request = ChatRequest(
            model="model-1",
            system="",
            messages=first,
            tools=(TOOL, OTHER_TOOL),
            tool_choice=choice,
            parallel_tool_calls=parallel,
        )
        await provider.complete(request)

    for sent, expected in zip(fakes[kind].requests, EXPECTED_CHOICE[kind], strict=True):
        assert {key: sent.body.get(key) for key in expected} == expected
        if kind not in ("anthropic",) and "parallel_tool_calls" not in expected:
            assert "parallel_tool_calls" not in sent.body
