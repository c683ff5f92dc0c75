"""What the calls of one turn did, at every level: the layer of the model-call seam that
notes each call's result for the turn's record (the request log's attempts, who
answered the turn, what the response cache did) and for the response's headers."""

from inference.calls.watching import WatchedCalls
from inference.guardrails.events import GuardrailOutcomes
from inference.neutral.calls import (
    Answerer,
    Attempt,
    CacheOutcome,
    CallResult,
    CallStream,
    ModelCalls,
)
from inference.neutral.types import Usage
from inference.providers.base import ProviderError


class CallRecorder:
    """What the response's headers and the turn's record tell: every upstream attempt,
    and, of the answering conversation's latest call (the agent the client called, not
    its subagents), who answered it, in how many attempts, and what the cache did (a
    stream's headers leave once it opened: what is known then)."""

    def __init__(self) -> None:
        self.attempts: list[Attempt] = []  # every upstream attempt of the turn
        self.retries = 0  # attempts another attempt of the same call followed
        self.answerer: Answerer | None = None
        self.tries = 0
        self.cache: CacheOutcome | None = None
        self.hits: list[CacheOutcome] = []  # the calls the cache answered, every level
        self.kept = False  # whether the cache kept a reply of the turn's
        self.guardrails = GuardrailOutcomes()  # every guardrail that ran, how it ended

    def opened(self, stream: CallStream) -> None:
        """The answering conversation's stream opened."""
        self.answerer, self.tries, self.cache = stream.answered_by, stream.tries, stream.cache

    def noted(self, result: CallResult, answering: bool) -> None:
        self.attempts += result.attempts
        self.retries += max(0, len(result.attempts) - 1)
        cache = result.cache
        if answering:
            self.answerer, self.tries, self.cache = (
                result.answered_by,
                len(result.attempts),
                cache,
            )
        if cache is not None:
            if cache.result == "hit":
                self.hits.append(cache)
            elif cache.key is not None:
                self.kept = True

    def failed(self, error: ProviderError, answering: bool) -> None:
        self.attempts += error.attempts
        self.retries += max(0, len(error.attempts) - 1)
        if answering:
            self.answerer, self.tries = None, len(error.attempts)

    @property
    def shown(self) -> Usage:
        """What the hits report to the client: their tokens as first paid, at no cost."""
        total = sum((hit.first_paid for hit in self.hits), Usage())
        return Usage(
            total.prompt_tokens,
            total.completion_tokens,
            total.cached_tokens,
            total.reasoning_tokens,
            total.cache_write_tokens,
            0,
        )

    @property
    def saved_micro_usd(self) -> int:
        """What the hits saved: their replies' cost when first paid."""
        return sum(hit.first_paid.cost_micro_usd or 0 for hit in self.hits)


class RecordedCalls(WatchedCalls):
    """One conversation's calls, each noted by the turn's recorder (``answering``: the
    conversation of the agent the client called)."""

    def __init__(self, calls: ModelCalls, recorder: CallRecorder, answering: bool) -> None:
        super().__init__(calls)
        self.recorder = recorder
        self.answering = answering

    def opened(self, stream: CallStream) -> None:
        if self.answering:
            self.recorder.opened(stream)

    def ended(self, result: CallResult) -> None:
        self.recorder.noted(result, self.answering)

    def failed(self, error: ProviderError) -> None:
        self.recorder.failed(error, self.answering)
