"""The wire-format fakes are faithful: each provider's official SDK, pointed at its fake,
parses normal and streamed replies (text and tool calls) and error bodies, and sends
the same path and auth headers our provider module sends.
"""

import asyncio
import base64
import logging
from collections.abc import Iterator

import anthropic
import cohere
import httpx
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from agents.schema import ProviderConfig
from inference.neutral.types import ChatRequest, Message
from inference.providers.registry import PROVIDER_CLASSES
from tests.fakes.base import FakeUpstream, Reply
from tests.fakes.gemini_upstream import thought_signature
from tests.upstreams import api_key_of

# cohere's generated models use pydantic-1 names that pydantic 2 deprecates.
pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning:cohere.*")

WEATHER_TOOL_CALL = ("get_weather", {"city": "Paris"})
HI = "Hi"


@pytest.fixture
def no_sdk_warnings(caplog: pytest.LogCaptureFixture) -> Iterator[None]:
    """SDKs that skip frames they cannot parse only log it (cohere does): fail on that."""
    with caplog.at_level(logging.WARNING):
        yield
    assert [record.getMessage() for record in caplog.records] == []


def our_request(kind: str, fake: FakeUpstream) -> None:
    """One call through our provider module, so its request can be set beside the SDK's."""

    async def call() -> None:
        async with httpx.AsyncClient() as client:
            settings = ProviderConfig(api_key="k", base_url=fake.url)
            provider = PROVIDER_CLASSES[kind](kind, kind, client, settings)
            await provider.complete(
                ChatRequest(model="model-1", system="", messages=(Message("user", HI),))
            )

    asyncio.run(call())


# Anthropic ---------------------------------------------------------------------------


@pytest.fixture
def claude(fakes: dict[str, FakeUpstream]) -> anthropic.Anthropic:
    return anthropic.Anthropic(
        base_url=fakes["anthropic"].url, api_key=api_key_of("anthropic"), max_retries=0
    )


def test_anthropic_sdk_parses_message_and_event_stream(
    claude: anthropic.Anthropic, fakes: dict[str, FakeUpstream], no_sdk_warnings: None
) -> None:
    fakes["anthropic"].script(
        Reply.of_text("Hello there", prompt_tokens=12, completion_tokens=3),
        Reply.of_chunks("Hel", "lo", prompt_tokens=12, completion_tokens=3),
    )
    message = claude.messages.create(
        model="claude-model", max_tokens=64, messages=[{"role": "user", "content": HI}]
    )
    with claude.messages.stream(
        model="claude-model", max_tokens=64, messages=[{"role": "user", "content": HI}]
    ) as stream:
        streamed_text = "".join(stream.text_stream)
        final = stream.get_final_message()

    assert message.content[0].type == "text"
    assert message.content[0].text == "Hello there"
    assert (message.stop_reason, message.model) == ("end_turn", "claude-model")
    assert (message.usage.input_tokens, message.usage.output_tokens) == (12, 3)
    assert streamed_text == "Hello"
    assert final.content[0].type == "text"
    assert final.content[0].text == "Hello"
    assert (final.usage.input_tokens, final.usage.output_tokens, final.stop_reason) == (
        12,
        3,
        "end_turn",
    )


def test_anthropic_sdk_parses_tool_use_whole_and_streamed(
    claude: anthropic.Anthropic, fakes: dict[str, FakeUpstream], no_sdk_warnings: None
) -> None:
    fakes["anthropic"].script(*[Reply.of_tool_calls(WEATHER_TOOL_CALL)] * 2)
    tools = [{"name": "get_weather", "description": "Weather.", "input_schema": {"type": "object"}}]
    message = claude.messages.create(
        model="claude-model",
        max_tokens=64,
        tools=tools,
        messages=[{"role": "user", "content": HI}],
    )
    with claude.messages.stream(
        model="claude-model", max_tokens=64, tools=tools, messages=[{"role": "user", "content": HI}]
    ) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()

    for reply in (message, final):
        block = reply.content[0]
        assert block.type == "tool_use"
        assert (block.name, block.input) == ("get_weather", {"city": "Paris"})
        assert reply.stop_reason == "tool_use"
    assert "input_json" in kinds
    assert kinds[-1] == "message_stop"


def test_anthropic_sdk_raises_typed_errors_from_fake_error_bodies(
    claude: anthropic.Anthropic, fakes: dict[str, FakeUpstream]
) -> None:
    fakes["anthropic"].script(
        Reply.of_error(429, "slow down", headers={"retry-after": "3"}),
        Reply.of_error(529, "Overloaded"),
    )
    for error_class in (anthropic.RateLimitError, anthropic.OverloadedError):
        with pytest.raises(error_class) as raised:
            claude.messages.create(
                model="claude-model", max_tokens=64, messages=[{"role": "user", "content": HI}]
            )
        assert raised.value.body["error"]["type"] in ("rate_limit_error", "overloaded_error")


def test_anthropic_sdk_and_our_provider_send_same_path_and_auth(
    claude: anthropic.Anthropic, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes["anthropic"]
    claude.messages.create(
        model="claude-model", max_tokens=64, messages=[{"role": "user", "content": HI}]
    )
    our_request("anthropic", fake)

    sdk, ours = fake.requests
    assert ours.path == sdk.path == "/v1/messages"
    # SDK 2.x speaks API version 2026-10-21 with a bearer key; we pin 2023-06-01, whose
    # documented auth is x-api-key and which still takes temperature and top_p.
    assert sdk.headers["anthropic-version"] == "2026-10-21"
    assert sdk.headers["authorization"] == f"Bearer {api_key_of('anthropic')}"
    assert ours.headers["anthropic-version"] == "2023-06-01"
    assert ours.headers["x-api-key"] == "k"
    assert ours.body["messages"] == [{"role": "user", "content": [{"type": "text", "text": HI}]}]


# Gemini ------------------------------------------------------------------------------


@pytest.fixture
def gemini(fakes: dict[str, FakeUpstream]) -> genai.Client:
    options = genai_types.HttpOptions(base_url=fakes["gemini"].url, api_version="v1beta")
    return genai.Client(api_key=api_key_of("gemini"), http_options=options)


def test_gemini_sdk_parses_response_and_sse_stream(
    gemini: genai.Client, fakes: dict[str, FakeUpstream], no_sdk_warnings: None
) -> None:
    fakes["gemini"].script(
        Reply.of_text("Hello there", prompt_tokens=12, completion_tokens=3),
        Reply.of_chunks("Hel", "lo", prompt_tokens=12, completion_tokens=3),
    )
    response = gemini.models.generate_content(model="gemini-model", contents=HI)
    chunks = list(gemini.models.generate_content_stream(model="gemini-model", contents=HI))

    assert response.text == "Hello there"
    assert response.candidates[0].finish_reason == genai_types.FinishReason.STOP
    usage = response.usage_metadata
    assert (usage.prompt_token_count, usage.candidates_token_count) == (12, 3)
    assert "".join(chunk.text or "" for chunk in chunks) == "Hello"
    assert chunks[-1].candidates[0].finish_reason == genai_types.FinishReason.STOP
    assert chunks[-1].usage_metadata.total_token_count == 15
    assert fakes["gemini"].requests[1].query == {"alt": ["sse"]}


def test_gemini_sdk_parses_function_calls_with_thought_signatures(
    gemini: genai.Client, fakes: dict[str, FakeUpstream], no_sdk_warnings: None
) -> None:
    fakes["gemini"].script(*[Reply.of_tool_calls(WEATHER_TOOL_CALL)] * 2)
    response = gemini.models.generate_content(model="gemini-model", contents=HI)
    chunks = list(gemini.models.generate_content_stream(model="gemini-model", contents=HI))

    streamed = [call for chunk in chunks for call in chunk.function_calls or []]
    numbers = [recorded.number for recorded in fakes["gemini"].requests]
    for call, number in zip((response.function_calls[0], streamed[0]), numbers, strict=True):
        assert (call.id, call.name, call.args) == (
            f"call_{number}_0",
            "get_weather",
            {"city": "Paris"},
        )
    part = response.candidates[0].content.parts[0]
    assert part.thought_signature == base64.b64decode(thought_signature(0))


def test_gemini_sdk_raises_typed_errors_from_fake_error_bodies(
    gemini: genai.Client, fakes: dict[str, FakeUpstream]
) -> None:
    fakes["gemini"].script(Reply.of_error(429, "quota"), Reply.of_error(503, "overloaded"))
    for error_class, status in ((genai_errors.ClientError, 429), (genai_errors.ServerError, 503)):
        with pytest.raises(error_class) as raised:
            gemini.models.generate_content(model="gemini-model", contents=HI)
        assert raised.value.code == status


def test_gemini_sdk_and_our_provider_send_same_path_and_auth(
    gemini: genai.Client, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes["gemini"]
    gemini.models.generate_content(model="model-1", contents=HI)
    our_request("gemini", fake)

    sdk, ours = fake.requests
    assert ours.path == sdk.path == "/v1beta/models/model-1:generateContent"
    assert sdk.headers["x-goog-api-key"] == api_key_of("gemini")
    assert ours.headers["x-goog-api-key"] == "k"
    assert ours.body["contents"] == sdk.body["contents"]


# Cohere ------------------------------------------------------------------------------


@pytest.fixture
def command(fakes: dict[str, FakeUpstream]) -> cohere.ClientV2:
    return cohere.ClientV2(api_key=api_key_of("cohere"), base_url=fakes["cohere"].url)


def test_cohere_sdk_parses_chat_and_event_stream(
    command: cohere.ClientV2, fakes: dict[str, FakeUpstream], no_sdk_warnings: None
) -> None:
    fakes["cohere"].script(
        Reply.of_text("Hello there", prompt_tokens=12, completion_tokens=3),
        Reply.of_chunks("Hel", "lo", prompt_tokens=12, completion_tokens=3),
    )
    messages = [{"role": "user", "content": HI}]
    response = command.chat(model="command-model", messages=messages)
    events = list(command.chat_stream(model="command-model", messages=messages))

    assert response.finish_reason == "COMPLETE"
    assert response.message.content[0].text == "Hello there"
    assert (response.usage.billed_units.input_tokens, response.usage.tokens.output_tokens) == (
        12,
        3,
    )
    assert [event.type for event in events] == [
        "message-start",
        "content-start",
        "content-delta",
        "content-delta",
        "content-end",
        "message-end",
    ]
    assert (
        "".join(
            event.delta.message.content.text for event in events if event.type == "content-delta"
        )
        == "Hello"
    )
    end = events[-1]
    assert end.delta.finish_reason == "COMPLETE"
    assert end.delta.usage.billed_units.output_tokens == 3


def test_cohere_sdk_parses_tool_calls_whole_and_streamed(
    command: cohere.ClientV2, fakes: dict[str, FakeUpstream], no_sdk_warnings: None
) -> None:
    fakes["cohere"].script(*[Reply.of_tool_calls(WEATHER_TOOL_CALL)] * 2)
    messages = [{"role": "user", "content": HI}]
    response = command.chat(model="command-model", messages=messages)
    events = list(command.chat_stream(model="command-model", messages=messages))

    call = response.message.tool_calls[0]
    assert (call.id, call.function.name, call.function.arguments) == (
        f"call_{fakes['cohere'].requests[0].number}_0",
        "get_weather",
        '{"city": "Paris"}',
    )
    assert response.finish_reason == "TOOL_CALL"
    start = next(event for event in events if event.type == "tool-call-start")
    delta = next(event for event in events if event.type == "tool-call-delta")
    assert start.delta.message.tool_calls.function.name == "get_weather"
    assert delta.delta.message.tool_calls.function.arguments == '{"city": "Paris"}'
    assert events[-1].delta.finish_reason == "TOOL_CALL"


def test_cohere_sdk_raises_typed_errors_from_fake_error_bodies(
    command: cohere.ClientV2, fakes: dict[str, FakeUpstream]
) -> None:
    fakes["cohere"].script(Reply.of_error(429, "trial limit"), Reply.of_error(498, "bad key"))
    for error_class in (cohere.TooManyRequestsError, cohere.InvalidTokenError):
        with pytest.raises(error_class) as raised:
            command.chat(
                model="command-model",
                messages=[{"role": "user", "content": HI}],
                request_options={"max_retries": 0},
            )
        assert raised.value.body["message"] in ("trial limit", "bad key")


def test_cohere_sdk_and_our_provider_send_same_path_and_auth(
    command: cohere.ClientV2, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes["cohere"]
    command.chat(model="model-1", messages=[{"role": "user", "content": HI}])
    our_request("cohere", fake)

    sdk, ours = fake.requests
    assert ours.path == sdk.path == "/v2/chat"
    assert sdk.headers["authorization"] == f"Bearer {api_key_of('cohere')}"
    assert ours.headers["authorization"] == "Bearer k"
    assert ours.body["messages"] == sdk.body["messages"]
    assert (ours.body["model"], ours.body["stream"]) == (sdk.body["model"], sdk.body["stream"])
