"""One line of a batch, run as a request of the batch's caller by the dialect of its
endpoint (``inference.serving.batchline``). A refusal or an upstream failure is the
line's outcome, in its dialect's error shape; only a ``rate_limit_exceeded`` refusal is
raised, for the runner to wait and send the line again."""

import time
import uuid
from dataclasses import dataclass
from typing import Any

from agents.schema import Config
from core.requestlog import RequestLog
from inference.engine import Engine
from inference.neutral.errors import ApiError
from inference.serving.batchline import BatchLines, LineCaller


@dataclass(frozen=True)
class LineOutcome:
    """The response a line got (``status_code`` and ``body``, in its endpoint's dialect),
    and, when it failed, the error's code and message; what it cost."""

    status_code: int
    body: dict[str, Any]
    request_id: str
    error_code: str = ""
    error_message: str = ""
    cost_micro_usd: int = 0

    @property
    def succeeded(self) -> bool:
        return self.status_code == 200


class RateLimited(Exception):
    """The caller's ``rpm`` or ``tpm`` refused the line: send it again in ``wait`` s."""

    def __init__(self, wait: float) -> None:
        super().__init__(f"rate limited, retry in {wait} s")
        self.wait = wait


async def run_line(
    lines: BatchLines, body: dict[str, Any], caller: LineCaller, config: Config, engine: Engine
) -> LineOutcome:
    request_id = uuid.uuid4().hex
    log = RequestLog(request_id=request_id, method="BATCH", path=lines.path, dialect="batch")
    started = time.perf_counter()
    try:
        answered = await lines.answer(body, caller, config, engine, log)
        log.status = 200
        return LineOutcome(200, answered, request_id, cost_micro_usd=_cost(log))
    except ApiError as error:
        if error.status == 429 and error.code == "rate_limit_exceeded":
            raise RateLimited(float(error.headers.get("Retry-After", "1"))) from error
        log.status, log.error = error.status, error.code or error.error_type
        return refused(lines, error, request_id, _cost(log))
    finally:
        log.latency_ms = round((time.perf_counter() - started) * 1000, 2)
        log.emit()


def refused(lines: BatchLines, error: ApiError, request_id: str, cost: int = 0) -> LineOutcome:
    """A line's outcome when ``error`` refused it, in its endpoint's error shape."""
    status, body = lines.error_shape(error)
    return LineOutcome(
        status, body, request_id, error.code or error.error_type, error.message, cost
    )


def _cost(log: RequestLog) -> int:
    return round((log.cost_usd or 0) * 1e6)
