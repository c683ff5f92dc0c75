"""The waits of a streamed reply for its next event: each ends at its own deadline (the
idle gap, or the call's total), though one timer serves the whole stream."""

import asyncio
import json
import time
from collections.abc import Awaitable, Callable

import httpx
import pytest

from agents.schema import ProviderConfig, TimeoutConfig
from inference.neutral.types import ChatRequest, Message, TextDelta
from inference.providers.base import ProviderError
from inference.providers.registry import PROVIDER_CLASSES
from tests.providerstreams import events_of


def _chunk(payload: str) -> bytes:
    frame = f"data: {payload}\n\n".encode()
    return b"%x\r\n%s\r\n" % (len(frame), frame)


type Handler = Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]]


def _upstream(gaps: list[float], then_stall: bool) -> Handler:
    """Streams a word after each of ``gaps`` (seconds), then stalls or finishes."""

    async def answer(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        length = next(
            int(line.split(b":")[1])
            for line in head.split(b"\r\n")
            if line.lower().startswith(b"content-length:")
        )
        await reader.readexactly(length)
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Transfer-Encoding: chunked\r\n\r\n"
        )
        for gap in gaps:
            await asyncio.sleep(gap)
            writer.write(_chunk(json.dumps({"choices": [{"index": 0, "delta": {"content": "w"}}]})))
            await writer.drain()
        if then_stall:
            await asyncio.sleep(3600)
        finish = {"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]}
        writer.write(_chunk(json.dumps(finish)) + _chunk("[DONE]") + b"0\r\n\r\n")
        await writer.drain()

    return answer


def _stream(gaps: list[float], then_stall: bool, timeouts: TimeoutConfig) -> tuple[int, float]:
    """The words streamed before the end, and the seconds it took; raises the failure."""

    async def call() -> tuple[int, float]:
        server = await asyncio.start_server(_upstream(gaps, then_stall), "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        started = time.monotonic()
        words = 0
        try:
            async with httpx.AsyncClient() as client:
                settings = ProviderConfig(
                    api_key="k", base_url=f"http://127.0.0.1:{port}/v1", timeout=timeouts
                )
                provider = PROVIDER_CLASSES["openai"]("openai", "openai", client, settings)
                request = ChatRequest(model="m", system="", messages=(Message("user", "Hi"),))
                async for event in events_of(provider, request):
                    words += isinstance(event, TextDelta)
        finally:
            server.close()
        return words, time.monotonic() - started

    return asyncio.run(call())


@pytest.mark.timeout(30)
def test_gaps_shorter_than_idle_never_time_out() -> None:
    words, _ = _stream([0.2] * 8, False, TimeoutConfig(idle=0.5, total=20))

    assert words == 8


@pytest.mark.timeout(30)
def test_a_stalled_stream_times_out_one_idle_gap_after_its_last_event() -> None:
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"timeout\.idle") as failure:
        _stream([0.3, 0.3, 0.3], True, TimeoutConfig(idle=0.5, total=20))

    assert failure.value.status == 504
    assert 0.9 + 0.5 <= time.monotonic() - started < 0.9 + 0.5 + 0.5


@pytest.mark.timeout(30)
def test_the_total_ends_a_stream_whose_events_keep_coming() -> None:
    started = time.monotonic()
    with pytest.raises(ProviderError, match=r"timeout\.total"):
        _stream([0.2] * 20, False, TimeoutConfig(idle=0.5, total=1.5))

    assert 1.5 <= time.monotonic() - started < 2.2
