"""Which native structured-output mechanism each wire format uses, and when it uses none.

Native JSON modes of OpenAI, Cohere and Anthropic's forced tool need an object root;
Gemini's ``responseSchema`` takes any root. Where no native mechanism fits, the
request relies on the system-prompt instruction (and the gateway's validation).
"""

import json
from typing import Any

import httpx
import pytest

from agents.schema import ProviderConfig
from inference.neutral.types import (
    ChatRequest,
    Message,
    ResponseFormat,
    StreamAccumulator,
    ToolSpec,
)
from inference.providers import anthropic_format, cohere_format, gemini_format, openai_format
from tests.fakes.base import FakeUpstream, Reply
from tests.providerstreams import events_of

OBJECT_SCHEMA = {"type": "object", "properties": {"a": {"type": "integer"}}}
ARRAY_SCHEMA = {"type": "array", "items": {"type": "integer"}}
TOOL = ToolSpec(name="lookup", description="Look up.", parameters={"type": "object"})


def request(response_format: ResponseFormat, tools: tuple[ToolSpec, ...] = ()) -> ChatRequest:
    return ChatRequest(
        model="m",
        system="s",
        messages=(Message("user", "x"),),
        tools=tools,
        response_format=response_format,
    )


def native(kind: str, body: dict[str, Any]) -> Any:
    if kind == "anthropic":
        return body.get("tool_choice")
    if kind == "gemini":
        return body.get("generationConfig")
    return body.get("response_format")


ENCODERS = {
    "openai": lambda r: openai_format.encode_request(r, stream=False),
    "cohere": lambda r: cohere_format.encode_request(r, stream=False),
    "anthropic": lambda r: anthropic_format.encode_request(r, stream=False),
    "gemini": gemini_format.encode_request,
}


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("openai", {"type": "json_object"}),
        ("cohere", {"type": "json_object"}),
        ("anthropic", {"type": "tool", "name": "json_response"}),
        ("gemini", {"responseMimeType": "application/json"}),
    ],
)
def test_json_object_mode_is_native_everywhere(kind: str, expected: Any) -> None:
    body = ENCODERS[kind](request(ResponseFormat(kind="json_object")))

    assert native(kind, body) == expected


def test_anthropic_json_object_tool_takes_any_object() -> None:
    body = anthropic_format.encode_request(request(ResponseFormat(kind="json_object")), False)

    assert body["tools"][0]["input_schema"] == {"type": "object"}


@pytest.mark.parametrize(
    ("kind", "expected"), [("openai", None), ("cohere", None), ("anthropic", None)]
)
def test_array_root_schema_is_left_to_the_instruction(kind: str, expected: Any) -> None:
    body = ENCODERS[kind](request(ResponseFormat(kind="json_schema", schema=ARRAY_SCHEMA)))

    assert native(kind, body) is expected
    assert "tools" not in body


def test_gemini_takes_an_array_root_schema_natively() -> None:
    body = gemini_format.encode_request(
        request(ResponseFormat(kind="json_schema", schema=ARRAY_SCHEMA))
    )

    assert body["generationConfig"]["responseSchema"] == {
        "type": "ARRAY",
        "items": {"type": "INTEGER"},
    }


def test_anthropic_does_not_force_the_response_tool_over_the_agents_own_tools() -> None:
    response_format = ResponseFormat(kind="json_schema", schema=OBJECT_SCHEMA)

    body = anthropic_format.encode_request(request(response_format, tools=(TOOL,)), False)

    assert "tool_choice" not in body
    assert [tool["name"] for tool in body["tools"]] == ["lookup"]


async def test_anthropic_forced_tool_input_comes_back_as_the_reply_text(
    fakes: dict[str, FakeUpstream],
) -> None:
    fake = fakes["anthropic"]
    fake.script(Reply.of_text('{"a": 1}'), Reply.of_text('{"a": 2}'))
    structured = request(ResponseFormat(kind="json_schema", schema=OBJECT_SCHEMA))
    async with httpx.AsyncClient() as client:
        settings = ProviderConfig(api_key="k", base_url=fake.url)
        provider = anthropic_format.AnthropicProvider("anthropic", "anthropic", client, settings)
        whole = await provider.complete(structured)
        accumulator = StreamAccumulator()
        async for event in events_of(provider, structured):
            accumulator.add(event)
    streamed = accumulator.response()

    for reply, value in ((whole, 1), (streamed, 2)):
        assert json.loads(reply.text) == {"a": value}
        assert (reply.finish_reason, reply.tool_calls) == ("stop", ())
    assert [sent.body["tool_choice"]["name"] for sent in fake.requests] == ["json_response"] * 2
