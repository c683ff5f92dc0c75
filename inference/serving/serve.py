"""One way to answer a turn, whatever dialect the client spoke: prepare it, run it, and
write the answer as one body or as a stream of that dialect's frames.

Streaming is written once here: a failure after the first frame went out can only be
told in a last frame of the dialect (``ReplyFrames.failed``), since the status line is
already sent.
"""

import logging
from collections.abc import AsyncIterator, Callable
from dataclasses import replace
from typing import Any

from django.http import HttpResponse, HttpResponseBase, StreamingHttpResponse

from core import fastjson
from inference.neutral.errors import ApiError
from inference.neutral.reply import ReplyFormat, ReplyFrames, ReplyHeader
from inference.neutral.request import ClientRequest
from inference.serving.context import InferenceRequest
from inference.turn.preparation import live_config, prepare_turn
from inference.turn.runner import Streamed, TurnRunner

logger = logging.getLogger("gateway.inference")
# Names the client's tools the gateway left out of what the model sees (built-in tools).
DROPPED_TOOLS_HEADER = "X-Gateway-Dropped-Tools"
_INTERNAL_ERROR = ApiError(
    500, "The gateway failed while streaming the reply", code="internal_error"
)


async def serve(
    request: InferenceRequest, client: ClientRequest, reply: ReplyFormat, id_prefix: str
) -> HttpResponseBase:
    holder, engine = request.runtime.holder, request.runtime.engine
    config = live_config(holder.config, holder.problems)
    if (directives := request.headers.get("Cache-Control")) is not None:
        client = replace(client, cache_control=directives)
    turn = await prepare_turn(
        client,
        config,
        engine,
        request.log,
        id_prefix=id_prefix,
        key=request.api_key,
        span=request.span,
    )
    runner = TurnRunner(config, engine, request.log)
    header = ReplyHeader(turn.completion_id, turn.created, turn.requested_model, turn.include_usage)
    response: HttpResponseBase
    if client.stream:
        streamed = await runner.open_stream(turn)
        frames = reply.stream(header)
        response = event_stream(_frames(frames, streamed, header), frames.content_type)
        headers = streamed.headers
    else:
        replied = await runner.complete(turn)
        body = reply.body(header, replied.answer)
        await reply.finished(body)
        response = json_response(body)
        if (cost := replied.answer.usage.cost_usd) is not None:
            response["X-Gateway-Cost-Usd"] = f"{cost:.6f}"
        headers = replied.headers
    for name, value in headers.items():
        response[name] = value
    if client.tools.dropped:
        response[DROPPED_TOOLS_HEADER] = ", ".join(client.tools.dropped)
    return response


async def _frames(
    stream: ReplyFrames, streamed: Streamed, header: ReplyHeader
) -> AsyncIterator[bytes]:
    """The dialect's frames: those of each batch of events in one piece (one send), the
    answer's ending with the frames that close the stream in another."""
    events = streamed.events
    try:
        yield stream.opening() + stream.frames(streamed.first)
        async for batch in events:
            if frames := stream.frames(batch):
                yield frames
        yield stream.frames(streamed.ending()) + await stream.ended()
    except ApiError as error:
        yield stream.failed(error)
    except Exception:
        logger.exception("stream %s failed", header.id)
        yield stream.failed(_INTERNAL_ERROR)
    finally:
        await events.aclose()


def json_response(body: dict[str, Any]) -> HttpResponse:
    return HttpResponse(fastjson.dumps(body), content_type="application/json")


class EventStream(StreamingHttpResponse):
    """A stream whose frames are bytes already, handed on as they are. Django reads a
    stream's content through a new generator that makes each part bytes every time it is
    read (by each middleware that wraps it, then by the handler), and the handler through
    one more: three generators more that every event of a stream went through."""

    @property
    def streaming_content(self) -> AsyncIterator[bytes]:
        return self._frames

    @streaming_content.setter
    def streaming_content(self, frames: AsyncIterator[bytes]) -> None:
        self._frames = frames
        self._done: list[Callable[[], None]] = []
        self.is_async = True

    def __aiter__(self) -> AsyncIterator[bytes]:
        return self._frames

    def when_done(self, callback: Callable[[], None]) -> None:
        """``callback`` runs once the stream was sent or given up: when the handler
        closes the response (``gateway.handler``), rather than from one more generator
        that every frame would pass through."""
        self._done.append(callback)

    def close(self) -> None:
        done, self._done = self._done, []
        try:
            for callback in done:
                callback()
        finally:
            super().close()


def event_stream(
    frames: AsyncIterator[bytes], content_type: str = "text/event-stream"
) -> StreamingHttpResponse:
    response = EventStream(frames, content_type=content_type)
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response
