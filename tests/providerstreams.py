"""A provider's streamed reply as the tests read it: event by event."""

from collections.abc import AsyncIterator

from inference.neutral.types import ChatRequest, StreamEvent
from inference.providers.base import Provider


async def events_of(provider: Provider, request: ChatRequest) -> AsyncIterator[StreamEvent]:
    """Open the call as routing does, then its events one at a time."""
    opened = await provider.open_stream(request, lambda batch: None)
    async for batch in opened.events():
        for event in batch:
            yield event
