"""The Messages dialect's stream writer: blocks in Anthropic's order, whatever order the
provider's events came in."""

import json
from typing import Any

from inference.dialects.messages.reply import MessagesReply
from inference.neutral.reply import ReplyHeader
from inference.neutral.types import (
    Finish,
    StreamEvent,
    TextDelta,
    ToolCallDelta,
    Usage,
    UsageReport,
)
from tests.replyframes import written

HEADER = ReplyHeader("msg_1", 0, "coder")


async def blocks(*events: StreamEvent) -> list[tuple[int, str, Any]]:
    """(index, type, text or tool name) of each content_block_start, in order."""

    started = []
    for frame in await written(MessagesReply().stream(HEADER), *events):
        kind, data = frame.decode().split("\n")[:2]
        payload = json.loads(data.removeprefix("data: "))
        if kind == "event: content_block_start":
            block = payload["content_block"]
            started.append((payload["index"], block["type"], block.get("name")))
    return started


CALL = (
    ToolCallDelta(index=0, id="call_1", name="get_weather", arguments='{"city": '),
    ToolCallDelta(index=0, arguments='"Oslo"}'),
)


async def test_text_that_comes_after_a_tool_call_is_still_the_first_block() -> None:
    assert await blocks(*CALL, TextDelta("Let me look."), Finish("tool_calls")) == [
        (0, "text", None),
        (1, "tool_use", "get_weather"),
    ]


async def test_text_then_calls_keep_their_order() -> None:
    second = ToolCallDelta(index=1, id="call_2", name="get_time", arguments="{}")
    events = (TextDelta("Looking."), *CALL, second, Finish("tool_calls"), UsageReport(Usage()))
    assert await blocks(*events) == [
        (0, "text", None),
        (1, "tool_use", "get_weather"),
        (2, "tool_use", "get_time"),
    ]


async def test_only_tool_calls_open_no_text_block() -> None:
    assert await blocks(*CALL, Finish("tool_calls")) == [(0, "tool_use", "get_weather")]
