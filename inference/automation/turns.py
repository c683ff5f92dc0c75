"""A turn no client asked for (a trigger's, a task's), run on the engine's normal path:
the user's history, budgets, cost and ledger, judges, a trace and a request record, as
any ``/v1`` request's. A task's turn runs as its stored caller (its key's limits, its
depth). A refusal (a budget, a provider that failed) is an ``ApiError``."""

import time
import uuid
from dataclasses import dataclass
from functools import partial

from agents.schema import Config
from core.requestlog import RequestLog
from inference.engine import Engine
from inference.ledger.requests import record_requests
from inference.money.caller import Purpose
from inference.money.keys import KeyGrant
from inference.neutral.request import Claims, ClientRequest
from inference.neutral.types import Message, Usage
from inference.telemetry.names import run_span
from inference.telemetry.spans import RequestTrace
from inference.telemetry.tracing import TRACING
from inference.turn.preparation import prepare_turn
from inference.turn.runner import TurnRunner


@dataclass(frozen=True)
class Answered:
    reply: str
    usage: Usage


async def run_turn(
    config: Config,
    engine: Engine,
    agent: str,
    user_id: str,
    message: str,
    what: str,
    *,
    key: KeyGrant | None = None,
    purpose: Purpose = "turn",
    task_depth: int = 0,
) -> Answered:
    """A turn of ``agent`` for ``user_id`` (with ``key``'s limits, when a task carries
    one); ``what`` names it in the log and the record (``trigger:<name>``, ``task:<id>``)."""
    log = RequestLog(request_id=uuid.uuid4().hex, method="RUN", path=what[:64], dialect="run")
    started = time.perf_counter()
    span = run_span(what, partial(_traced, log, engine))
    client = ClientRequest(
        model=agent,
        system=(),
        messages=(Message(role="user", content=message),),
        claims=Claims(header_user=user_id),
        conversation_param="message",
    )
    try:
        turn = await prepare_turn(
            client,
            config,
            engine,
            log,
            id_prefix="run-",
            key=key,
            span=span,
            purpose=purpose,
            task_depth=task_depth,
        )
        answered = await TurnRunner(config, engine, log).complete(turn)
        log.status = 200
        return Answered(answered.answer.text, answered.answer.usage)
    except Exception as error:
        log.status = getattr(error, "status", 500)
        log.error = log.error or type(error).__name__
        if span.recording:
            span.fail(log.error)
        raise
    finally:
        log.latency_ms = round((time.perf_counter() - started) * 1000, 2)
        log.emit()
        if span.recording:
            span.end()


def _traced(log: RequestLog, engine: Engine, trace: RequestTrace) -> None:
    TRACING.export(trace)
    if TRACING.store:
        engine.writer.defer(record_requests, (log, trace))
