"""LLM judges: after a reply is sent, each judge of the answering agent scores it in the
background.

A judge sees the last user message and the reply and answers, through the structured
output machinery (so on any provider kind, repaired if need be), one object keyed by
criterion: ``{score: 0..10, reasoning: one sentence}``. Each criterion becomes a score
row; a judge that fails is recorded as a failed run. Nothing here reaches the user or
their bill.
"""

import asyncio
import json
import logging
import random
from dataclasses import dataclass
from typing import Any

from django.db import transaction

from agents.schema import Config, JudgeConfig
from core.logformat import log_event
from core.metrics import observe_judge_scores
from inference.cache.forgetting import forget_entry
from inference.calls.asking import Asked, Billing, ask
from inference.database import in_database
from inference.engine import Engine
from inference.erasures import erasures_of
from inference.models import JudgeRun, JudgeScore
from inference.money.caller import Caller
from inference.money.settlement import settle
from inference.neutral.types import ChatRequest, Message, ResponseFormat
from inference.routing.deployments import route_of
from inference.structured.exchange import quoted_exchange
from inference.structured.instruction import structured_output_instruction
from inference.telemetry.genai import agent_attributes, judged_attributes, usage_attributes
from inference.telemetry.names import agent_span
from inference.telemetry.spans import Span

logger = logging.getLogger("gateway.judges")

_SCORE = {
    "type": "object",
    "properties": {
        "score": {"type": "integer", "minimum": 0, "maximum": 10},
        "reasoning": {"type": "string"},
    },
    "required": ["score", "reasoning"],
    "additionalProperties": False,
}


@dataclass(frozen=True)
class JudgedEntry:
    """The response-cache entry behind a judged reply: forgotten when one of the judge's
    scores is below ``min_score`` (the agent's ``cache.min_score``)."""

    key: str
    min_score: float


@dataclass(frozen=True)
class JudgedReply:
    """A reply to judge, and whose it was: the caller of the judged turn (when it began:
    its user erased since gets a digest), the agent that answered."""

    completion_id: str
    caller: Caller
    agent: str
    experiment: str
    variant: str
    user_text: str
    reply: str
    cached: JudgedEntry | None = None


def sampled_judges(
    config: Config, agent_judges: list[str], rng: random.Random
) -> list[JudgeConfig]:
    """The agent's judges that this reply draws (each with its own ``sampling_rate``)."""
    judges = [config.judge(name) for name in agent_judges]
    return [judge for judge in judges if judge is not None and rng.random() < judge.sampling_rate]


def verdict_format(judge: JudgeConfig) -> ResponseFormat:
    criteria = list(judge.rubrics)
    schema = {
        "type": "object",
        "properties": dict.fromkeys(criteria, _SCORE),
        "required": criteria,
        "additionalProperties": False,
    }
    return ResponseFormat(kind="json_schema", schema=schema, name="verdict", strict=True)


def judge_request(judge: JudgeConfig, user_text: str, reply: str) -> ChatRequest:
    """The judge's call on ``reply`` to ``user_text`` (a live reply's, or an
    evaluation's, ``inference.evaluations``)."""
    response_format = verdict_format(judge)
    rubric = "\n".join(f"- {criterion}: {text}" for criterion, text in judge.rubrics.items())
    system = (
        "You are an impartial judge of an AI assistant's reply. For each criterion below, "
        "give an integer score from 0 (worst) to 10 (best) and one sentence of reasoning.\n\n"
        f"Criteria:\n{rubric}\n\n{structured_output_instruction(response_format)}"
    )
    conversation = quoted_exchange(user_text, reply)
    return ChatRequest(
        model=judge.model,
        system=system,
        messages=(Message(role="user", content=conversation),),
        response_format=response_format,
    )


async def judge_reply(
    judge: JudgeConfig, subject: JudgedReply, config: Config, engine: Engine
) -> None:
    """Score one reply with one judge and record the outcome, whatever it is; in the
    reply's trace, an ``invoke_agent`` span under the judged turn's caller's."""
    caller = subject.caller.to("judge")
    with agent_span(caller.span, judge.name) as span:
        if span.recording:
            span.set(agent_attributes(judge.name, judge.model, subject.caller.user_id))
            span.set(judged_attributes(subject.agent))
        await _judge(judge, subject, config, engine, caller.traced(span), span)


async def _judge(
    judge: JudgeConfig,
    subject: JudgedReply,
    config: Config,
    engine: Engine,
    caller: Caller,
    span: Span,
) -> None:
    request = judge_request(judge, subject.user_text, subject.reply)
    billing = Billing(subject.agent, subject.completion_id, subject.experiment, subject.variant)
    verdict: dict[str, Any] | None = None
    error = ""
    asked: Asked | None = None
    try:
        asked = await ask(caller, config, engine, route_of(judge), request, billing, settles=False)
    except asyncio.CancelledError:
        # Shutdown ran out of patience with this judge: say so, since nothing is recorded.
        log_event(
            logger,
            "judged",
            logging.WARNING,
            completion_id=subject.completion_id,
            judge=judge.name,
            status="cancelled",
            error="the gateway stopped before the judge answered",
        )
        raise
    except Exception as failure:
        logger.exception("judge %s failed on %s", judge.name, subject.completion_id)
        error = f"internal error: {type(failure).__name__}"
        span.fail(type(failure).__name__)
    if asked is not None:
        span.set(usage_attributes(asked.usage))
        if asked.text is not None:
            verdict = json.loads(asked.text)
        else:
            error = asked.error
    await in_database(record_verdict, judge, subject, verdict, error, asked)
    if verdict is not None:
        scores = {criterion: verdict[criterion]["score"] for criterion in judge.rubrics}
        observe_judge_scores(judge.name, subject.agent, scores)
        cached = subject.cached
        if cached is not None and min(scores.values()) < cached.min_score:
            await forget_entry(cached.key)
    log_event(
        logger,
        "judged",
        completion_id=subject.completion_id,
        judge=judge.name,
        status="ok" if verdict is not None else "failed",
        error=error,
    )


def record_verdict(
    judge: JudgeConfig,
    subject: JudgedReply,
    verdict: dict[str, Any] | None,
    error: str,
    asked: Asked | None,
) -> None:
    """The judge's run, its scores, and what it spent (charged to the judged agent)."""
    with transaction.atomic():
        erasures = erasures_of([subject.caller.user_id])
        common = {
            "completion_id": subject.completion_id,
            "user_id": erasures.kept_id(subject.caller.user_id, subject.caller.started_at),
            "agent": subject.agent,
            "experiment": subject.experiment,
            "variant": subject.variant,
            "judge": judge.name,
            "judge_model": judge.model,
        }
        if asked is not None and asked.charge is not None:
            settle([asked.charge], erasures)
        run = JudgeRun.objects.create(
            **common, status="ok" if verdict is not None else "failed", error=error
        )
        if verdict is None:
            return
        JudgeScore.objects.bulk_create(
            JudgeScore(
                run=run,
                created_at=run.created_at,
                criterion=criterion,
                score=verdict[criterion]["score"],
                reasoning=verdict[criterion]["reasoning"],
                **common,
            )
            for criterion in judge.rubrics
        )
