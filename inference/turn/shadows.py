"""Shadow variants of an experiment: after the primary answered, the other variants
answer the same conversation in the background (each under its own preamble and tools)
and are judged; their answers are never stored, and what they spend is charged to the
experiment, never to the user."""

import logging
import uuid

from agents.schema import AgentConfig, Config
from core.logformat import log_event
from inference.database import in_database
from inference.engine import Engine
from inference.money.settlement import Charge, settle
from inference.neutral.calls import Answerer
from inference.neutral.errors import ApiError
from inference.neutral.types import Usage
from inference.providers.base import ProviderError
from inference.telemetry.genai import (
    agent_attributes,
    experiment_attributes,
    usage_attributes,
)
from inference.telemetry.spans import NO_SPAN, Span
from inference.tools.bounds import TurnBounds
from inference.tools.executor import CallContext, tool_loop
from inference.turn.judges import JudgedReply, judge_reply, sampled_judges
from inference.turn.preparation import Turn, agent_call

logger = logging.getLogger("gateway.shadows")


async def run_shadow(
    agent: AgentConfig, turn: Turn, config: Config, engine: Engine, parent: Span = NO_SPAN
) -> None:
    """Answer the turn with a shadow variant; in the reply's trace, an ``invoke_agent``
    span under ``parent``."""
    with parent.child(f"invoke_agent {agent.name}") as span:
        if span.recording:
            span.set(agent_attributes(agent.name, turn.requested_model, turn.user_id))
            span.set(experiment_attributes(turn.routing.experiment, agent.name))
        await _shadow(agent, turn, config, engine, span)


async def _shadow(
    agent: AgentConfig, turn: Turn, config: Config, engine: Engine, span: Span
) -> None:
    completion_id = f"shadow-{uuid.uuid4().hex}"
    try:
        call = await agent_call(agent, turn.setting, turn.user_id, config, engine)
        context = CallContext(config, engine, turn.user_id, TurnBounds(config.limits), span=span)
        loop = tool_loop(context, call.route, call.toolbox, call.request.response_format)
        answer = await loop.complete(call.request)
    except ProviderError as error:
        span.fail(error.code)
        await _charge(turn, agent, completion_id, error.usage, None)
        _failed(turn, agent, completion_id, error.message)
        return
    except ApiError as error:
        span.fail(error.code or error.error_type)
        _failed(turn, agent, completion_id, error.message)
        return
    span.set(usage_attributes(answer.usage))
    await _charge(turn, agent, completion_id, answer.usage, loop.outcome.answered_by)
    log_event(
        logger, "shadow_answered", completion_id=completion_id,
        experiment=turn.routing.experiment, variant=agent.name, tokens=answer.usage.total_tokens,
    )  # fmt: skip
    if answer.tool_calls:
        return  # it wanted the client's tools: there is no answer to judge
    subject = JudgedReply(
        completion_id=completion_id,
        user_id=turn.user_id,
        agent=agent.name,
        experiment=turn.routing.experiment,
        variant=agent.name,
        user_text=turn.user_text,
        reply=answer.text,
        started_at=turn.started_at,
    )
    for judge in sampled_judges(config, agent.judges, engine.rng):
        await judge_reply(judge, subject, config, engine, span)


async def _charge(
    turn: Turn, agent: AgentConfig, completion_id: str, usage: Usage, answered_by: Answerer | None
) -> None:
    """The variant's calls, charged to the experiment, never to the user."""
    if not usage.total_tokens:
        return
    charge = Charge(
        kind="shadow",
        user_id=turn.user_id,
        agent=agent.name,
        call_id=completion_id,
        usage=usage,
        answered_by=answered_by,
        experiment=turn.routing.experiment,
        variant=agent.name,
        started_at=turn.started_at,
    )
    await in_database(settle, [charge])


def _failed(turn: Turn, agent: AgentConfig, completion_id: str, message: str) -> None:
    log_event(
        logger, "shadow_failed", logging.WARNING, completion_id=completion_id,
        experiment=turn.routing.experiment, variant=agent.name, error=message,
    )  # fmt: skip
