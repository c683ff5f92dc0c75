"""Smoke tests (docs/automation.md): the ``persona`` agent plays the user, starting with
``opening`` (or a line of its own), for ``turns`` exchanges with ``agent`` (an
experiment's variant, drawn by weight), ending early at a persona line that contains
``stop_marker``; a run holds ``repetitions`` such conversations. Then each judge scores
the whole transcript, one score per criterion, and a run passes when every judge's mean
score (over its criteria) is at least ``min_score``.

Neither side has a real user's history: each conversation is the transcript alone, and
what both sides and the judges spend is charged to the tested agent (ledger kind
``smoke``), never to a user's budget.
"""

import json
import logging
import random
import uuid
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from agents.schema import AgentConfig, Config, JudgeConfig, SmokeTestConfig
from core.logformat import log_event
from inference.calls.asking import Asked, Billing, ask
from inference.database import in_database
from inference.engine import Engine
from inference.models import SmokeRun
from inference.money.caller import Caller
from inference.neutral.errors import ApiError
from inference.neutral.request import ClientRequest
from inference.neutral.types import ChatRequest, Message
from inference.providers.base import ProviderError
from inference.routing.deployments import route_of
from inference.structured.instruction import structured_output_instruction
from inference.turn.judges import verdict_format
from inference.turn.options import parse_options
from inference.turn.preparation import Setting, ask_agent

logger = logging.getLogger("gateway.automation")


def queue_run(test: SmokeTestConfig) -> int:
    return SmokeRun.objects.create(test=test.name, agent=test.agent, persona=test.persona_name).id


def _update(run_id: int, **fields: Any) -> None:
    SmokeRun.objects.filter(id=run_id).update(**fields)


@dataclass(frozen=True)
class _Run:
    """Who the run's calls are for (no real user: nothing of theirs is read), and whom
    they are charged to (the tested agent), as they go."""

    caller: Caller
    billing: Billing


def _run_of(test: SmokeTestConfig, run_id: int) -> _Run:
    caller = Caller(f"smoke:{test.name}", purpose="smoke")
    return _Run(caller, Billing(test.agent, f"smoke-{run_id}-{uuid.uuid4().hex[:8]}"))


def _answered(asked: Asked) -> str:
    if asked.text is None:
        raise ProviderError(502, asked.error, code=asked.code or "upstream_error")
    return asked.text


async def run_smoke_test(
    test: SmokeTestConfig, run_id: int, config: Config, engine: Engine
) -> dict[str, Any]:
    """Run a queued run to its end and record it; the run as the admin shows it."""
    await in_database(_update, run_id, status="running")
    charges = _run_of(test, run_id)
    transcript: list[dict[str, Any]] = []
    fields: dict[str, Any] = {}
    try:
        persona = config.persona(test)
        if persona is None:
            raise ApiError(404, f"agent '{test.persona}' is not configured any more")
        for conversation in range(test.repetitions):
            talk = _Conversation(test, conversation, transcript, run_id)
            await talk.hold(_tested(config, test.agent), persona, config, engine, charges)
        scores: dict[str, Any] = {}
        for name in test.judges:
            judge = config.judge(name)
            if judge is None:
                raise ApiError(404, f"judge '{name}' is not configured any more")
            scores[name] = await _judge(judge, test, transcript, config, engine, charges)
        passed = None
        if test.min_score is not None:
            passed = all(score["mean"] >= test.min_score for score in scores.values())
        fields = {"status": "done", "scores": scores, "passed": passed}
    except (ApiError, ProviderError) as error:
        fields = {"status": "failed", "error": error.message}
    except Exception as error:
        logger.exception("smoke test %s failed", test.name)
        fields = {"status": "failed", "error": f"internal error: {type(error).__name__}"}
    fields["transcript"] = transcript
    await in_database(_update, run_id, finished_at=timezone.now(), **fields)
    log_event(
        logger, "smoke_test_ran", test=test.name, run=run_id, status=fields["status"],
        passed=fields.get("passed"), error=fields.get("error", ""),
    )  # fmt: skip
    return {"id": run_id, "scores": {}, "error": "", "passed": None, **fields}


@dataclass(frozen=True)
class _Conversation:
    """One conversation of a run; its lines go into the run's ``transcript``, each with
    its conversation's number (from 1)."""

    test: SmokeTestConfig
    number: int
    transcript: list[dict[str, Any]]
    run_id: int

    async def hold(
        self,
        agent: AgentConfig,
        persona: AgentConfig,
        config: Config,
        engine: Engine,
        charges: _Run,
    ) -> None:
        test, lines = self.test, list[dict[str, Any]]()
        opening = test.opening
        if opening is None:  # the persona opens, asked to
            opener = [{"role": "agent", "text": _OPEN}]
            opening = await _answer(persona, opener, "agent", config, engine, charges)
        self._add(lines, "persona", opening)
        for exchange in range(test.turns):
            reply = await _answer(agent, lines, "persona", config, engine, charges)
            self._add(lines, "agent", reply)
            await in_database(_update, self.run_id, transcript=self.transcript)
            if exchange == test.turns - 1:
                return
            line = await _answer(persona, lines, "agent", config, engine, charges)
            self._add(lines, "persona", line)
            if test.stop_marker is not None and test.stop_marker in line:
                return

    def _add(self, lines: list[dict[str, Any]], role: str, text: str) -> None:
        line: dict[str, Any] = {"role": role, "text": text}
        lines.append(line)
        self.transcript.append({**line, "conversation": self.number + 1})


# What the persona is told when it opens the conversation itself.
_OPEN = "(Open the conversation, in your role.)"


def _tested(config: Config, name: str) -> AgentConfig:
    """The agent ``name``, or a variant of experiment ``name`` drawn by weight."""
    experiment = config.experiment(name)
    if experiment is not None:
        weights = [variant.weight for variant in experiment.variants]
        name = random.choices(experiment.variants, weights)[0].agent
    return _agent(config, name)


def _agent(config: Config, name: str) -> AgentConfig:
    agent = config.agent(name)
    if agent is None:
        raise ApiError(404, f"agent '{name}' is not configured any more")
    return agent


async def _answer(
    agent: AgentConfig,
    transcript: list[dict[str, Any]],
    user_role: str,
    config: Config,
    engine: Engine,
    charges: _Run,
) -> str:
    """``agent``'s next line, where the lines of ``user_role`` are the user's."""
    messages = tuple(
        Message(role="user" if line["role"] == user_role else "assistant", content=line["text"])
        for line in transcript
    )
    client = ClientRequest(model=agent.name, system=(), messages=messages)
    setting = Setting(client, parse_options(None), (), {})
    asked = await ask_agent(agent, setting, charges.caller, charges.billing, config, engine)
    return _answered(asked)


async def _judge(
    judge: JudgeConfig,
    test: SmokeTestConfig,
    transcript: list[dict[str, Any]],
    config: Config,
    engine: Engine,
    charges: _Run,
) -> dict[str, Any]:
    response_format = verdict_format(judge)
    rubric = "\n".join(f"- {criterion}: {text}" for criterion, text in judge.rubrics.items())
    system = (
        "You are an impartial judge of a conversation between a user and an AI assistant "
        "(the 'agent'). For each criterion below, give an integer score from 0 (worst) to 10 "
        f"(best) and one sentence of reasoning.\n\nCriteria:\n{rubric}\n\n"
        f"{structured_output_instruction(response_format)}"
    )
    quoted = json.dumps(
        [{"speaker": "user" if line["role"] == "persona" else "agent", "text": line["text"],
          "conversation": line.get("conversation", 1)}
         for line in transcript],
        ensure_ascii=False,
    )  # fmt: skip
    request = ChatRequest(
        model=judge.model,
        system=system,
        messages=(Message(role="user", content=f"The conversation, as JSON:\n{quoted}"),),
        response_format=response_format,
    )
    asked = await ask(charges.caller, config, engine, route_of(judge), request, charges.billing)
    verdict = json.loads(_answered(asked))
    criteria = {
        name: {"score": verdict[name]["score"], "reasoning": verdict[name]["reasoning"]}
        for name in judge.rubrics
    }
    mean = sum(item["score"] for item in criteria.values()) / len(criteria)
    return {"mean": mean, "criteria": criteria}
