"""A layer of the model-call seam that only watches the calls it passes on: it hears of a
stream as it opens (``opened``), of each call's result (``ended``) and of each failure
(``failed``), and changes none of them (the turn's recorder, tracing)."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from inference.neutral.calls import CallResult, CallStream, ModelCalls
from inference.neutral.types import ChatRequest
from inference.providers.base import ProviderError


class WatchedCalls:
    def __init__(self, calls: ModelCalls) -> None:
        self.calls = calls

    async def complete(self, request: ChatRequest) -> CallResult:
        try:
            result = await self.calls.complete(request)
        except ProviderError as error:
            self.failed(error)
            raise
        self.ended(result)
        return result

    @asynccontextmanager
    async def stream(
        self, request: ChatRequest, *, held: bool = False
    ) -> AsyncIterator[CallStream]:
        try:
            async with self.calls.stream(request, held=held) as opened:
                self.opened(opened)
                yield opened
        except ProviderError as error:
            self.failed(error)
            raise
        if opened.result is not None:
            self.ended(opened.result)

    def opened(self, stream: CallStream) -> None:
        """A stream opened: who answers it, in how many attempts, what the cache did."""

    def ended(self, result: CallResult) -> None:
        """A call ended with ``result``."""

    def failed(self, error: ProviderError) -> None:
        """A call failed with ``error`` (its attempts on it)."""
