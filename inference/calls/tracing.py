"""The layer of the model-call seam that tells a call's trace what the layers below it
decided: the response cache's result on the call's ``chat`` spans (routing opened one per
attempt), and, for a call the cache answered, a ``chat`` span of its own with the reply
as first answered."""

from dataclasses import replace

from inference.calls.watching import WatchedCalls
from inference.neutral.calls import CacheResult, CallResult, ModelCalls
from inference.providers.base import ProviderError
from inference.telemetry.genai import cache_attributes, cache_hit_attributes
from inference.telemetry.names import model_span
from inference.telemetry.spans import Span


class TracedCalls(WatchedCalls):
    """``cached``: what the cache does with a call that fails (``miss``, or ``bypass``
    when the request keeps it out); None for an agent without a cache. ``model``: the
    route's first model, naming a hit whose entry does not say who answered it."""

    def __init__(
        self, calls: ModelCalls, span: Span, cached: CacheResult | None, model: str
    ) -> None:
        super().__init__(calls)
        self.span = span
        self.cached = cached
        self.model = model

    def ended(self, result: CallResult) -> None:
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

    def failed(self, error: ProviderError) -> None:
        if self.cached is not None and self.span.recording:
            for attempt in error.attempts:
                attempt.span.set(cache_attributes(self.cached))
