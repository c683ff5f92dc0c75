"""A streamed reply read to its last event: the end of the body is read too (so the
connection is kept), but an upstream that never ends its body does not hold the reply."""

import asyncio
import json

import httpx
import pytest

from agents.schema import ProviderConfig
from inference.neutral.types import ChatRequest, Finish, Message, StreamEvent, TextDelta
from inference.providers.registry import PROVIDER_CLASSES
from tests.providerstreams import events_of


def _chunk(payload: str) -> bytes:
    frame = f"data: {payload}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(frame), frame)


async def _answer_without_ending(
    reader: asyncio.StreamReader, writer: asyncio.StreamWriter
) -> None:
    """Reads one request, streams a whole reply and ``[DONE]``, and never ends the body."""
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1])
        for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    await reader.readexactly(length)
    delta = {"choices": [{"index": 0, "delta": {"content": "Hi"}}]}
    finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
    writer.write(
        b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
        b"Transfer-Encoding: chunked\r\n\r\n"
        + _chunk(json.dumps(delta))
        + _chunk(json.dumps(finish))
        + _chunk("[DONE]")
    )
    await writer.drain()
    await asyncio.sleep(3600)


@pytest.mark.timeout(30)
def test_reply_ends_at_done_though_the_upstream_keeps_its_body_open() -> None:
    async def call() -> list[StreamEvent]:
        server = await asyncio.start_server(_answer_without_ending, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        try:
            async with httpx.AsyncClient() as client:
                settings = ProviderConfig(api_key="k", base_url=f"http://127.0.0.1:{port}/v1")
                provider = PROVIDER_CLASSES["openai"]("openai", "openai", client, settings)
                request = ChatRequest(model="m", system="", messages=(Message("user", "Hi"),))
                return [event async for event in events_of(provider, request)]
        finally:
            server.close()

    events = asyncio.run(call())

    assert [event.text for event in events if isinstance(event, TextDelta)] == ["Hi"]
    assert [event.reason for event in events if isinstance(event, Finish)] == ["stop"]
