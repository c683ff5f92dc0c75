"""The Responses API on the wire, in process: ``input`` items into the gateway's neutral
terms, and an answer out as a ``response`` object or its numbered event stream."""

import json
from typing import Any

import pytest

from inference.dialects.responses.body import ResponsesIn
from inference.dialects.responses.reader import from_responses, stored_items
from inference.dialects.responses.reply import ResponsesReply, echo
from inference.neutral.errors import ApiError
from inference.neutral.reply import ReplyHeader
from inference.neutral.request import ClientRequest
from inference.neutral.types import (
    ChatResponse,
    Finish,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
    UsageReport,
)
from tests.replyframes import sse_frames, written

HEADER = ReplyHeader(id="resp_1", created=1700000000, model="support")


def read(**body: Any) -> ClientRequest:
    return from_responses(ResponsesIn(**{"model": "support", **body})).client


def test_a_string_input_is_one_user_message_and_instructions_come_first() -> None:
    client = read(input="Hello", instructions="Be terse.")
    assert client.system == ("Be terse.",)
    assert [(m.role, m.content) for m in client.messages] == [("user", "Hello")]
    assert client.conversation_param == "input" and client.include_usage


def test_function_calls_join_their_assistant_turn_and_outputs_name_their_tool() -> None:
    client = read(
        input=[
            {"role": "developer", "content": "Use tools."},
            {"role": "user", "content": [{"type": "input_text", "text": "Weather?"}]},
            {"role": "assistant", "content": "Let me look."},
            {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
            {"type": "function_call", "call_id": "c2", "name": "get_time", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c2", "output": "noon"},
            {"type": "function_call_output", "call_id": "c1", "output": "sunny"},
        ]
    )
    assert client.system == ("Use tools.",)
    _, assistant, *results = client.messages
    assert (assistant.content, [call.id for call in assistant.tool_calls]) == (
        "Let me look.",
        ["c1", "c2"],
    )
    assert [(r.tool_call_id, r.name, r.content) for r in results] == [
        ("c2", "get_time", "noon"),
        ("c1", "get_weather", "sunny"),
    ]
    assert client.manages_history and client.user_text == "Weather?"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (
            {"input": [{"type": "function_call_output", "call_id": "x", "output": ""}]},
            "input[0].call_id",
        ),
        ({"input": [{"type": "web_search_call"}]}, "input[0].type"),
        ({"input": "hi", "tools": [{"type": "file_search"}]}, "tools"),
        ({"input": "hi", "tools": [{"type": "custom", "name": "patch"}]}, "tools[0].type"),
        ({"input": "hi", "reasoning": {"effort": "extreme"}}, "reasoning.effort"),
    ],
)
def test_what_cannot_be_served_is_a_400_naming_the_field(body: dict[str, Any], param: str) -> None:
    with pytest.raises(ApiError) as raised:
        read(**body)
    assert (raised.value.status, raised.value.param) == (400, param)


def test_a_whole_answer_is_a_completed_response_repeating_the_settings() -> None:
    body = ResponsesIn(model="support", input="Hi", temperature=0.2, metadata={"team": "a"})
    answer = ChatResponse(
        text="Checking.",
        usage=Usage(prompt_tokens=11, completion_tokens=7, reasoning_tokens=2),
        tool_calls=(ToolCall("c1", "get_weather", "{}"),),
    )
    response = ResponsesReply(echo(body)).body(HEADER, answer)
    assert (response["id"], response["status"], response["model"]) == (
        "resp_1",
        "completed",
        "support",
    )
    assert (response["temperature"], response["metadata"]) == (0.2, {"team": "a"})
    message, call = response["output"]
    assert message["content"][0]["text"] == "Checking."
    assert (call["type"], call["call_id"], call["name"]) == ("function_call", "c1", "get_weather")
    assert response["usage"]["output_tokens_details"] == {"reasoning_tokens": 2}
    assert response["usage"]["total_tokens"] == 18


def parsed(frame: bytes) -> dict[str, Any]:
    kind_line, data_line = frame.decode().strip().split("\n")
    data = json.loads(data_line.removeprefix("data: "))
    assert kind_line == f"event: {data['type']}"
    return data


async def test_a_stream_is_the_documented_sequence_with_increasing_numbers() -> None:
    stream = ResponsesReply(echo(ResponsesIn(model="support", input="Hi"))).stream(HEADER)
    frames = await written(
        stream,
        TextDelta("Hel"),
        TextDelta("lo"),
        ToolCallDelta(index=0, id="c1", name="lookup", arguments='{"q":'),
        ToolCallDelta(index=0, arguments='"x"}'),
        Finish("tool_calls"),
        UsageReport(Usage(prompt_tokens=3, completion_tokens=4)),
    )
    sent = [parsed(frame) for frame in frames]
    assert [event["sequence_number"] for event in sent] == list(range(len(sent)))
    assert [event["type"] for event in sent] == [
        "response.created",
        "response.in_progress",
        "response.output_item.added",
        "response.content_part.added",
        "response.output_text.delta",
        "response.output_text.delta",
        "response.output_item.added",
        "response.function_call_arguments.delta",
        "response.function_call_arguments.delta",
        "response.output_text.done",
        "response.content_part.done",
        "response.output_item.done",
        "response.function_call_arguments.done",
        "response.output_item.done",
        "response.completed",
    ]
    completed = sent[-1]["response"]
    assert completed["output"][0]["content"][0]["text"] == "Hello"
    assert completed["output"][1]["arguments"] == '{"q":"x"}'
    assert completed["usage"]["total_tokens"] == 7


async def test_a_failure_mid_stream_is_response_failed_with_the_output_so_far() -> None:
    stream = ResponsesReply(echo(ResponsesIn(model="support", input="Hi"))).stream(HEADER)
    sent = sse_frames(stream.opening() + stream.frames([TextDelta("Partial")]))
    failed = parsed(stream.failed(ApiError(502, "upstream broke", code="bad_gateway")))

    assert failed["type"] == "response.failed"
    assert failed["sequence_number"] == len(sent)
    assert failed["response"]["error"] == {"code": "bad_gateway", "message": "upstream broke"}
    assert failed["response"]["output"][0]["id"].startswith("msg_")


def test_a_namespace_is_its_function_tools_and_built_in_tools_are_named_as_dropped() -> None:
    member = {"type": "function", "name": "spawn_agent", "parameters": {"type": "object"}}
    tools = [
        {"type": "function", "name": "exec_command", "parameters": {"type": "object"}},
        {"type": "namespace", "name": "multi_agent_v1", "tools": [member]},
        {"type": "web_search", "external_web_access": False},
    ]

    read = from_responses(ResponsesIn(model="support", input="Hi", tools=tools))

    assert [tool.name for tool in read.client.tools.specs] == ["exec_command", "spawn_agent"]
    assert read.namespaces == {"spawn_agent": "multi_agent_v1"}
    assert read.client.tools.dropped == ("web_search",)
    body = ResponsesReply(echo(ResponsesIn(model="support", input="Hi")), read.namespaces).body(
        HEADER, ChatResponse(text="", tool_calls=(ToolCall("c1", "spawn_agent", "{}"),))
    )
    assert (body["output"][0]["name"], body["output"][0]["namespace"]) == (
        "spawn_agent",
        "multi_agent_v1",
    )


def test_stored_input_items_get_ids_and_text_parts() -> None:
    items = stored_items(
        [
            {"role": "user", "content": "One"},
            {"type": "message", "id": "msg_kept", "role": "assistant", "content": "Two"},
            {"type": "function_call_output", "call_id": "c1", "output": "x"},
        ]
    )

    assert items[0]["type"] == "message" and items[0]["id"].startswith("msg_")
    assert items[0]["content"] == [{"type": "input_text", "text": "One"}]
    assert items[1]["id"] == "msg_kept"
    assert items[1]["content"] == [{"type": "output_text", "text": "Two"}]
    assert items[2]["id"].startswith("fco_")
    assert stored_items("Hi")[0]["content"] == [{"type": "input_text", "text": "Hi"}]


def test_an_output_answers_a_call_of_the_earlier_chain_and_errors_count_from_the_input() -> None:
    earlier = [
        {"type": "message", "role": "user", "content": "Weather?"},
        {"type": "function_call", "call_id": "c1", "name": "get_weather", "arguments": "{}"},
    ]
    output = {"type": "function_call_output", "call_id": "c1", "output": "sunny"}

    read = from_responses(ResponsesIn(model="support", input=[output]), earlier=earlier)

    assert [message.role for message in read.client.messages] == ["user", "assistant", "tool"]
    assert read.client.manages_history
    with pytest.raises(ApiError) as raised:
        from_responses(
            ResponsesIn(model="support", input=[{"role": "user", "content": "Hm"}, output]),
            earlier=earlier[:1],
        )
    assert raised.value.param == "input[1].call_id"
