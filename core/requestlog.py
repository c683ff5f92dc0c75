"""One structured log line per request: the fields the request code fills in as it goes."""

import logging
from dataclasses import asdict, dataclass

from core.logformat import log_event

logger = logging.getLogger("gateway.requests")


@dataclass
class RequestLog:
    request_id: str
    method: str
    path: str
    user: str = ""
    agent: str = ""
    experiment: str = ""
    variant: str = ""
    provider: str = ""
    tokens: int = 0
    status: int = 0
    error: str = ""
    latency_ms: float = 0.0

    def emit(self) -> None:
        log_event(logger, "request", **asdict(self))
