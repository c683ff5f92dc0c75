"""The layer of the model-call seam that tells a call's trace what the layers below it
decided: the response cache's result on the call's ``chat`` spans (routing opened one per
attempt), and, for a call the cache answered, a ``chat`` span of its own with the reply
as first answered."""

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import replace

from inference.neutral.calls import CacheResult, CallResult, CallStream, ModelCalls
from inference.neutral.types import ChatRequest
from inference.providers.base import ProviderError
from inference.telemetry.genai import cache_attributes, cache_hit_attributes
from inference.telemetry.names import model_span
from inference.telemetry.spans import Span


class TracedCalls:
    """``cached``: what the cache does with a call that fails (``miss``, or ``bypass``
    when the request keeps it out); None for an agent without a cache. ``model``: the
    route's first model, naming a hit whose entry does not say who answered it."""

    def __init__(
        self, calls: ModelCalls, span: Span, cached: CacheResult | None, model: str
    ) -> None:
        self.calls = calls
        self.span = span
        self.cached = cached
        self.model = model

    async def complete(self, request: ChatRequest) -> CallResult:
        try:
            result = await self.calls.complete(request)
        except ProviderError as error:
            self._failed(error)
            raise
        self._traced(result)
        return result

    @asynccontextmanager
    async def stream(
        self, request: ChatRequest, *, held: bool = False
    ) -> AsyncIterator[CallStream]:
        try:
            async with self.calls.stream(request, held=held) as opened:
                yield opened
        except ProviderError as error:
            self._failed(error)
            raise
        if opened.result is not None:
            self._traced(opened.result)

    def _traced(self, result: CallResult) -> None:
        cache = result.cache
        if cache is None or not self.span.recording:
            return
        if cache.result == "hit":
            model = result.answered_by.model if result.answered_by else self.model
            span = model_span(self.span, "chat", model)
            first = replace(result.reply, usage=cache.first_paid)
            span.set(cache_hit_attributes(model, first, cache.age or 0))
            span.end()
            return
        for attempt in result.attempts:
            attempt.span.set(cache_attributes(cache.result))

    def _failed(self, error: ProviderError) -> None:
        if self.cached is not None and self.span.recording:
            for attempt in error.attempts:
                attempt.span.set(cache_attributes(self.cached))
