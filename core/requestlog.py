"""One structured log line per request: the fields the request code fills in as it goes."""

import logging
from dataclasses import dataclass, field

from core.logformat import log_event

logger = logging.getLogger("gateway.requests")


@dataclass
class RequestLog:
    request_id: str
    method: str
    path: str
    dialect: str = ""  # the API it spoke (chat, messages, …); empty: not an API request
    user: str = ""
    model: str = ""  # the name the client asked for (an agent or an experiment)
    agent: str = ""
    experiment: str = ""
    variant: str = ""
    provider: str = ""  # the provider (name) that answered
    upstream: str = ""  # <provider>/<model> that answered the final model call
    completion_id: str = ""
    stream: bool = False
    tokens: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = 0.0  # None: a call of the turn has no known price
    cache: str = ""  # a cached agent's: hit, miss or bypass (X-Gateway-Cache)
    saved_usd: float = 0.0  # what the response cache saved the turn
    cache_age: int | None = None  # seconds: how old the hit's answer was
    # The cached question a semantic hit answered with: a user's words, kept for the
    # admin's record of the request and never written to the log line.
    matched_question: str = ""
    status: int = 0
    error: str = ""
    latency_ms: float = 0.0
    overhead_ms: float = 0.0  # latency_ms less the time spent waiting on providers
    # Every upstream attempt of the turn: provider, model, status, ms.
    attempts: list[dict[str, object]] = field(default_factory=list)
    # Of those, the ones another attempt of the same call followed (a retry, a fallback):
    # a tool round is a call of its own, not a retry.
    retries: int = 0

    def emit(self) -> None:
        """Write the request's log line (formatted at once), without the matched question."""
        fields = vars(self).copy()
        del fields["matched_question"]
        log_event(logger, "request", **fields)
