"""One structured log line per request: the fields the pipeline fills in as it goes."""

import json
import logging
from dataclasses import asdict, dataclass

logger = logging.getLogger("gateway.requests")


@dataclass
class RequestLog:
    request_id: str
    method: str
    path: str
    user: str = ""
    agent: str = ""
    variant: str = ""
    provider: str = ""
    tokens: int = 0
    status: int = 0
    error: str = ""
    latency_ms: float = 0.0

    def emit(self) -> None:
        logger.info(json.dumps({"event": "request", **asdict(self)}))
