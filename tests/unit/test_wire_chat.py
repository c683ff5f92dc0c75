"""Chat completions on the wire, in process: a request body into the gateway's neutral
terms, and an answer out as ``chat.completion`` or its chunk stream."""

import json
from typing import Any

import pytest

from inference.dialects.chat.body import ChatCompletionIn
from inference.dialects.chat.reader import from_chat_completion
from inference.dialects.chat.reply import ChatCompletionReply
from inference.neutral.errors import ApiError
from inference.neutral.reply import ReplyHeader
from inference.neutral.request import ClientRequest
from inference.neutral.types import (
    ChatResponse,
    Finish,
    Image,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    UsageReport,
)
from tests.replyframes import written

HEADER = ReplyHeader(id="chatcmpl-1", created=1700000000, model="support", include_usage=True)


def read(**body: Any) -> ClientRequest:
    return from_chat_completion(ChatCompletionIn(**{"model": "support", **body}))


def refused(**body: Any) -> ApiError:
    with pytest.raises(ApiError) as raised:
        read(**body)
    return raised.value


def test_system_and_developer_messages_are_taken_out_of_the_conversation() -> None:
    client = read(
        messages=[
            {"role": "system", "content": "Be terse."},
            {"role": "developer", "content": "Answer in French."},
            {"role": "user", "content": [{"type": "text", "text": "Bonjour"}]},
        ]
    )
    assert client.system == ("Be terse.", "Answer in French.")
    assert [(m.role, m.content) for m in client.messages] == [("user", "Bonjour")]
    assert client.user_text == "Bonjour" and not client.manages_history


def test_images_keep_their_place_among_the_text_parts() -> None:
    url = "data:image/png;base64,iVBORw0KGgo="
    (message,) = read(
        messages=[
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is"},
                    {"type": "image_url", "image_url": {"url": url}},
                    {"type": "text", "text": "this?"},
                ],
            }
        ]
    ).messages
    assert message.with_media
    assert [type(part).__name__ for part in message.parts] == ["str", "Image", "str"]
    assert Image(url) in message.parts


def test_a_tool_round_trip_becomes_calls_and_results() -> None:
    client = read(
        messages=[
            {"role": "user", "content": "Weather in Paris?"},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": '{"city":"Paris"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
        ],
        tools=[{"type": "function", "function": {"name": "get_weather", "parameters": {}}}],
    )
    _, assistant, result = client.messages
    assert assistant.tool_calls == (ToolCall("call_1", "get_weather", '{"city":"Paris"}'),)
    assert (result.role, result.tool_call_id, result.content) == ("tool", "call_1", "sunny")
    assert [tool.name for tool in client.tools.specs] == ["get_weather"]
    assert client.manages_history


def test_a_json_schema_response_format_is_checked_and_kept() -> None:
    schema = {"type": "object", "properties": {"name": {"type": "string"}}}
    client = read(
        messages=[{"role": "user", "content": "Who?"}],
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "person", "schema": schema},
        },
    )
    assert client.response_format is not None
    assert (client.response_format.kind, client.response_format.name) == ("json_schema", "person")
    assert client.response_format.schema == schema


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (
            {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "tool", "tool_call_id": "call_x", "content": "orphan"},
                ]
            },
            "messages[1].tool_call_id",
        ),
        (
            {
                "messages": [{"role": "user", "content": "hi"}],
                "tools": [{"type": "function", "function": {"name": " "}}],
            },
            "tools[0].function.name",
        ),
        ({"messages": [{"role": "user", "content": "hi"}], "n": 2}, "n"),
        (
            {
                "messages": [{"role": "user", "content": "hi"}],
                "response_format": {"type": "json_schema", "json_schema": {"schema": {"type": 7}}},
            },
            "response_format.json_schema.schema",
        ),
    ],
)
def test_what_cannot_be_served_is_a_400_naming_the_field(body: dict[str, Any], param: str) -> None:
    error = refused(**body)
    assert (error.status, error.param) == (400, param)


def test_a_whole_answer_is_one_chat_completion() -> None:
    answer = ChatResponse(
        text="",
        finish_reason="tool_calls",
        usage=Usage(prompt_tokens=11, completion_tokens=7, cached_tokens=3, cost_micro_usd=1250),
        tool_calls=(ToolCall("call_9", "get_weather", "{}"),),
    )
    body = ChatCompletionReply().body(HEADER, answer)
    assert (body["id"], body["object"], body["model"]) == (
        "chatcmpl-1",
        "chat.completion",
        "support",
    )
    (choice,) = body["choices"]
    assert choice["message"]["content"] is None  # tool calls and no text
    assert choice["message"]["tool_calls"][0]["function"] == {
        "name": "get_weather",
        "arguments": "{}",
    }
    assert body["usage"] == {
        "prompt_tokens": 11,
        "completion_tokens": 7,
        "total_tokens": 18,
        "prompt_tokens_details": {"cached_tokens": 3},
        "cost": 0.00125,
    }


async def frames(header: ReplyHeader, *items: StreamEvent) -> list[Any]:
    stream = ChatCompletionReply().stream(header)
    sent = await written(stream, *items)
    assert all(frame.startswith(b"data: ") and frame.endswith(b"\n\n") for frame in sent)
    return [
        frame[6:-2].decode() if frame == b"data: [DONE]\n\n" else json.loads(frame[6:])
        for frame in sent
    ]


async def test_a_stream_starts_with_the_role_and_ends_with_done() -> None:
    usage = Usage(prompt_tokens=2, completion_tokens=3, cost_micro_usd=None)  # no known price
    sent = await frames(
        HEADER,
        TextDelta("Hel"),
        ToolCallDelta(index=0, id="call_1", name="lookup", arguments='{"q"'),
        ToolCallDelta(index=0, arguments=':"x"}'),
        Finish("stop"),
        UsageReport(usage),
    )
    deltas = [chunk["choices"][0]["delta"] for chunk in sent[:-2]]
    assert deltas[0] == {"role": "assistant", "content": ""}
    assert deltas[1] == {"content": "Hel"}
    assert deltas[2]["tool_calls"][0] == {
        "index": 0,
        "id": "call_1",
        "type": "function",
        "function": {"arguments": '{"q"', "name": "lookup"},
    }
    assert deltas[3]["tool_calls"][0] == {"index": 0, "function": {"arguments": ':"x"}'}}
    assert sent[4]["choices"][0]["finish_reason"] == "stop"
    assert sent[-2] == {
        "id": "chatcmpl-1",
        "object": "chat.completion.chunk",
        "created": 1700000000,
        "model": "support",
        "choices": [],
        "usage": {"prompt_tokens": 2, "completion_tokens": 3, "total_tokens": 5},
    }
    assert sent[-1] == "[DONE]"


async def test_the_usage_chunk_is_sent_only_when_asked_for() -> None:
    header = ReplyHeader(id="chatcmpl-2", created=1, model="support", include_usage=False)
    sent = await frames(header, TextDelta("Hi"), Finish("stop"), UsageReport(Usage(1, 1)))
    assert [chunk for chunk in sent[:-1] if "usage" in chunk] == []


def test_a_failure_after_the_first_frame_is_an_error_frame() -> None:
    frame = ChatCompletionReply().stream(HEADER).failed(ApiError(502, "upstream broke", code="x"))
    assert json.loads(frame[6:])["error"]["message"] == "upstream broke"
