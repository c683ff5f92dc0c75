"""One judge's verdict on one reply of an evaluation, with the live judges' request and
verdict format (``inference.turn.judges``) and the structured-output loop, but none of
their records: the evaluation keeps its scores in its own cases."""

import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from agents.schema import Config, JudgeConfig
from inference.calls.asking import Asked, Billing, ask
from inference.engine import Engine
from inference.money.caller import Caller
from inference.routing.deployments import route_of
from inference.turn.judges import judge_request


@dataclass(frozen=True)
class Verdict:
    judge: str
    scores: dict[str, int]  # by "judge.criterion"; empty when the judge failed
    asked: Asked


async def verdict_on(
    judge: JudgeConfig,
    question: str,
    reply: str,
    caller: Caller,
    billing: Billing,
    config: Config,
    engine: Engine,
    going_on: Callable[[], Awaitable[None]],
) -> Verdict:
    """``judge``'s scores of ``reply`` to ``question``."""
    request = judge_request(judge, question, reply)
    asked = await ask(caller, config, engine, route_of(judge), request, billing, going_on=going_on)
    if asked.text is None:
        return Verdict(judge.name, {}, asked)
    verdict = json.loads(asked.text)  # validated against the verdict format by the loop
    scores = {
        f"{judge.name}.{criterion}": verdict[criterion]["score"] for criterion in judge.rubrics
    }
    return Verdict(judge.name, scores, asked)
