"""Shadow variants of an experiment: after the primary answered, the other variants
answer the same conversation in the background (each under its own preamble and tools)
and are judged; their answers are never stored, and what they spend is charged to the
experiment, never to the user."""

import logging
import uuid

from agents.schema import AgentConfig, Config
from core.logformat import log_event
from inference.calls.asking import Billing
from inference.engine import Engine
from inference.telemetry.genai import (
    agent_attributes,
    experiment_attributes,
    usage_attributes,
)
from inference.telemetry.names import agent_span
from inference.turn.judges import JudgedReply, judge_reply, sampled_judges
from inference.turn.preparation import Turn, ask_agent

logger = logging.getLogger("gateway.shadows")


async def run_shadow(agent: AgentConfig, turn: Turn, config: Config, engine: Engine) -> None:
    """Answer the turn with a shadow variant; in the reply's trace, an ``invoke_agent``
    span under the turn's caller's."""
    caller = turn.caller.to("shadow")
    experiment = turn.routing.experiment
    with agent_span(caller.span, agent.name) as span:
        if span.recording:
            span.set(agent_attributes(agent.name, turn.requested_model, turn.user_id))
            span.set(experiment_attributes(experiment, agent.name))
        completion_id = f"shadow-{uuid.uuid4().hex}"
        billing = Billing(agent.name, completion_id, experiment, agent.name)
        asked = await ask_agent(agent, turn.setting, caller.traced(span), billing, config, engine)
        span.set(usage_attributes(asked.usage))
        if asked.text is None:
            span.fail(asked.code or "failed")
            _failed(turn, agent, completion_id, asked.error)
            return
        log_event(
            logger, "shadow_answered", completion_id=completion_id,
            experiment=experiment, variant=agent.name, tokens=asked.usage.total_tokens,
        )  # fmt: skip
        if asked.tool_calls:
            return  # it wanted the client's tools: there is no answer to judge
        subject = JudgedReply(
            completion_id=completion_id,
            caller=turn.caller.traced(span),
            agent=agent.name,
            experiment=experiment,
            variant=agent.name,
            user_text=turn.user_text,
            reply=asked.text,
        )
        for judge in sampled_judges(config, agent.judges, engine.rng):
            await judge_reply(judge, subject, config, engine)


def _failed(turn: Turn, agent: AgentConfig, completion_id: str, message: str) -> None:
    log_event(
        logger, "shadow_failed", logging.WARNING, completion_id=completion_id,
        experiment=turn.routing.experiment, variant=agent.name, error=message,
    )  # fmt: skip
