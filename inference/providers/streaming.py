"""A streamed model call, read one network read at a time.

The call is opened first (``ProviderStream.open``): the request sent and its reply read
up to its first content event, or to its end when the caller holds the whole reply, so
that routing can still try another deployment before anything went on. Its events then
come as batches, one per network read (``ProviderStream.events``): a read that carried
several server-sent events is one step of every layer above, and one frame sent to the
client. The wire-format module only decodes (``EventDecoder``); the reading, its
timeouts, and the errors of a cut or unreadable stream are here, once.

Lines and events are parsed with httpx-sse's decoders (its ``aiter_sse`` reads through a
generator step per line); they live in a private module of that library, whose version
is pinned with its hash.
"""

import asyncio
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Protocol

import httpx
from httpx_sse import ServerSentEvent, SSEError
from httpx_sse._decoders import SSEDecoder, SSELineDecoder

from agents.schema import TimeoutConfig
from core.upstreamclock import upstream_wait
from inference.neutral.types import Finish, StreamEvent, TextDelta, ToolCallDelta

# How long the end of a streamed body may take after the reply's last event (it normally
# comes with it) before the connection is given up.
BODY_END_WAIT = 0.5

type Noted = Callable[[list[StreamEvent]], None]


class EventDecoder(Protocol):
    """One wire format's reading of a reply's server-sent events. ``ended``: the event
    that ends the reply was read (OpenAI's ``[DONE]``); the rest of the body is then
    read, so the connection is kept for the next call."""

    ended: bool

    def decode(self, event: ServerSentEvent) -> list[StreamEvent]:
        """The reply's events that ``event`` carries; raises ``ProviderError`` for an
        error the upstream sent mid-stream."""
        ...


class Upstream(Protocol):
    """What a stream needs of its provider (``inference.providers.base.Provider``): its
    HTTP calls, timeouts and the errors it maps failures to."""

    timeouts: TimeoutConfig
    unreadable_errors: tuple[type[Exception], ...]

    def build(
        self, url: str, body: dict[str, Any], headers: dict[str, str] | None = None
    ) -> httpx.Request: ...

    async def opened(self, request: httpx.Request, end: float) -> httpx.Response: ...

    def deadline(
        self, end: float, seconds: float, phase: str, now: float | None = None
    ) -> tuple[float, str]: ...

    def timed_out(self, phase: str) -> Exception: ...

    def transport_error(self, error: httpx.HTTPError) -> Exception: ...

    def unreadable(self, error: Exception) -> Exception: ...

    def cut_short(self) -> Exception: ...


@dataclass(frozen=True)
class StreamCall:
    """What a wire format sends for a streamed call, and how it reads the answer."""

    url: str
    body: dict[str, Any]
    decoder: EventDecoder
    headers: dict[str, str] | None = None


class ProviderStream:
    """One streamed call of ``provider``. ``noted`` sees every batch before anyone else
    (routing prices the usage and keeps what was said); ``first`` holds the events read
    while opening."""

    def __init__(self, provider: Upstream, call: StreamCall, noted: Noted) -> None:
        self.provider = provider
        self.call = call
        self.noted = noted
        self.first: list[StreamEvent] = []
        self.done = False  # the reply was read to its end
        self._finished = False  # a Finish event was among its events
        self._response: httpx.Response | None = None
        self._texts: AsyncIterator[str] | None = None
        self._lines = SSELineDecoder()
        self._decoder = SSEDecoder()
        self._timer: asyncio.TimerHandle | None = None
        self._wait: asyncio.Timeout | None = None
        self._until = 0.0
        self._end = 0.0

    async def open(self, held: bool) -> None:
        """Send the call and read up to its first content event (``held``: to its end)."""
        provider = self.provider
        loop = asyncio.get_running_loop()
        self._end = loop.time() + provider.timeouts.total
        try:
            try:
                with upstream_wait():
                    request = provider.build(self.call.url, self.call.body, self.call.headers)
                    response = self._response = await provider.opened(request, self._end)
                content_type = response.headers.get("content-type", "").partition(";")[0]
                if "text/event-stream" not in content_type:
                    raise SSEError(f"Expected a text/event-stream response, got {content_type!r}")
            except httpx.HTTPError as error:
                raise provider.transport_error(error) from error
            # SSE is UTF-8 whatever the header says; set, httpx does not parse the header
            # with the email package to learn it (about 1% of a streamed request's CPU).
            response.encoding = "utf-8"
            self._texts = response.aiter_text()
            while not self.done:
                batch = await self._read(loop)
                self.first += batch
                if not held and any(_is_content(event) for event in batch):
                    return
        except BaseException:
            await self.aclose()
            raise

    async def events(self) -> AsyncIterator[list[StreamEvent]]:
        """The events read while opening, then those of each read, until the reply ends."""
        loop = asyncio.get_running_loop()
        try:
            if self.first:
                yield self.first
            while not self.done:
                batch = await self._read(loop)
                if batch:
                    yield batch
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        response, self._response = self._response, None
        if response is not None:
            await response.aclose()

    async def _read(self, loop: asyncio.AbstractEventLoop) -> list[StreamEvent]:
        """The events of the next network read, noted ([] when it carried none)."""
        provider = self.provider
        until, phase = provider.deadline(self._end, provider.timeouts.idle, "idle", loop.time())
        try:
            try:
                with upstream_wait():
                    text = await self._next(loop, until)
            except TimeoutError:
                raise provider.timed_out(phase) from None
            lines = self._lines.decode(text) if text is not None else self._lines.flush()
            batch: list[StreamEvent] = []
            decoder = self.call.decoder
            for line in lines:
                event = self._decoder.decode(line.rstrip("\n"))
                if event is not None:
                    batch += decoder.decode(event)
            if decoder.ended:
                with upstream_wait():
                    await self._read_to_end()
            if text is None or decoder.ended:
                self.done = True
        except httpx.HTTPError as error:
            raise provider.transport_error(error) from error
        except provider.unreadable_errors as error:
            raise provider.unreadable(error) from error
        self.noted(batch)
        self._finished = self._finished or any(isinstance(event, Finish) for event in batch)
        if self.done and not self._finished:
            raise provider.cut_short()
        return batch

    async def _next(self, loop: asyncio.AbstractEventLoop, until: float) -> str | None:
        """The next text of the body (None at its end), or ``TimeoutError`` at ``until``.

        One timer for the whole stream: a timer for each wait (``asyncio.timeout_at``)
        cost about a quarter of the CPU the gateway adds to a streamed event. Each wait
        runs in a ``Timeout`` without a deadline; when the timer fires, it expires the
        wait under way if that wait's deadline has passed, and otherwise fires again at
        that deadline."""
        assert self._texts is not None
        async with asyncio.timeout(None) as wait:
            self._wait, self._until = wait, until
            timer = self._timer
            if timer is not None and timer.when() > until:
                timer.cancel()
                timer = None
            if timer is None:
                self._timer = loop.call_at(until, self._check, loop)
            try:
                return await anext(self._texts, None)
            finally:
                self._wait = None

    def _check(self, loop: asyncio.AbstractEventLoop) -> None:
        self._timer = None
        if self._wait is None:
            return  # between two waits: the next one sets the timer again
        now = loop.time()
        if now >= self._until:
            self._wait.reschedule(now)
        else:
            self._timer = loop.call_at(self._until, self._check, loop)

    async def _read_to_end(self) -> None:
        """Read what follows the last event, so that the connection is kept for the next
        call; an upstream that does not end its body within a moment loses it, as it
        would unread."""
        assert self._texts is not None
        try:
            async with asyncio.timeout(BODY_END_WAIT):
                async for _ in self._texts:
                    pass
        except (TimeoutError, httpx.HTTPError):
            return


def _is_content(event: StreamEvent) -> bool:
    return isinstance(event, ToolCallDelta) or (isinstance(event, TextDelta) and bool(event.text))
