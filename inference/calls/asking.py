"""Asking an agent something for a caller, in one call: the conversation, its tool loop,
the provider's failure caught, and what it spent charged. Judges, shadow variants,
memory extraction, evaluations (replays and judging) and smoke runs all ask this way."""

import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agents.schema import AgentConfig, Config
from inference.calls.conversation import Borrowed, Conversation
from inference.database import in_database
from inference.money.caller import Caller
from inference.money.meter import Meter
from inference.money.settlement import Charge, charge, settle
from inference.neutral.calls import Answerer
from inference.neutral.types import ChatRequest, ResponseFormat, ToolCall, Usage
from inference.providers.base import ProviderError
from inference.routing.deployments import Route
from inference.tools.bounds import CallAllowance
from inference.tools.toolbox import Toolbox


@dataclass(frozen=True)
class Billing:
    """Whom the calls are charged to: the agent (and its experiment and variant), under
    the completion or call id they belong to."""

    agent: str
    call_id: str
    experiment: str = ""
    variant: str = ""


@dataclass(frozen=True)
class Asked:
    """What the agent answered (``text`` None: it failed, ``error`` says why), what every
    call of it spent (priced), who answered the last call, and how long it took."""

    text: str | None
    error: str
    code: str
    usage: Usage
    answered_by: Answerer | None
    latency_ms: float
    charge: Charge | None  # the ledger row of what it spent (None: nothing)
    tool_calls: tuple[ToolCall, ...] = ()  # the client's tools it called instead of answering

    @classmethod
    def refused(cls, error: str, code: str, latency_ms: float = 0.0) -> "Asked":
        """An ask that could not begin (its agent's tools cannot be gathered)."""
        return cls(None, error, code, Usage(), None, latency_ms, None)


async def ask(
    caller: Caller,
    config: Config,
    engine: Borrowed,
    route: Route,
    request: ChatRequest,
    billing: Billing,
    *,
    toolbox: Toolbox | None = None,
    agent: AgentConfig | None = None,
    checked_against: ResponseFormat | None = None,
    going_on: Callable[[], Awaitable[None]] | None = None,
    settles: bool = True,
) -> Asked:
    """``request`` asked through ``route`` (with ``toolbox``: the agent's own tools), its
    reply checked against ``checked_against`` (default: the request's
    ``response_format``). ``going_on``: asked before each call (raises to call the rest
    off). ``settles``: the charge is written here (else the caller writes it with its own
    records)."""
    meter = Meter(caller)
    allowance = CallAllowance(config.limits, going_on)
    conversation = Conversation(config, engine, caller, allowance, meter)
    checked = checked_against or request.response_format
    loop = conversation.loop(route, toolbox or Toolbox(), checked, agent)
    started = time.perf_counter()
    text: str | None = None
    error = code = ""
    calls: tuple[ToolCall, ...] = ()
    try:
        answer = await loop.complete(request)
        text, calls = answer.text, answer.tool_calls
    except ProviderError as failure:
        error, code = failure.message, failure.code
        caller.span.fail(failure.code)
    latency_ms = (time.perf_counter() - started) * 1000
    usage = meter.billed()
    answered_by = loop.last.answered_by if loop.last is not None else None
    cost = None
    if usage.total_tokens:
        cost = charge(
            caller,
            usage,
            agent=billing.agent,
            call_id=billing.call_id,
            answered_by=answered_by,
            experiment=billing.experiment,
            variant=billing.variant,
        )
        if settles:
            await in_database(settle, [cost])
    return Asked(text, error, code, usage, answered_by, latency_ms, cost, calls)
