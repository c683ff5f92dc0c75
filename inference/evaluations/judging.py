"""One judge's verdict on one reply of an evaluation, with the live judges' request and
verdict format (``inference.turn.judges``) and the structured-output loop, but none of
their records: the evaluation keeps its scores in its own cases."""

import json
import time
from dataclasses import dataclass

from agents.schema import JudgeConfig
from inference.evaluations.replay import Spoken, elapsed_ms
from inference.providers.base import ProviderError
from inference.routing.deployments import route_of
from inference.tools.executor import CallContext, tool_loop
from inference.tools.toolbox import Toolbox
from inference.turn.judges import judge_request


@dataclass(frozen=True)
class Verdict:
    judge: str
    scores: dict[str, int]  # by "judge.criterion"; empty when the judge failed
    spoken: Spoken


async def verdict_on(
    judge: JudgeConfig, question: str, reply: str, context: CallContext
) -> Verdict:
    """``judge``'s scores of ``reply`` to ``question``."""
    request = judge_request(judge, question, reply)
    loop = tool_loop(context, route_of(judge), Toolbox(), request.response_format)
    started = time.perf_counter()
    try:
        answer = await loop.complete(request)
    except ProviderError as error:
        failed = Spoken(
            None, error.message, error.usage, loop.outcome.answered_by, elapsed_ms(started)
        )
        return Verdict(judge.name, {}, failed)
    verdict = json.loads(answer.text)  # validated against the verdict format by the loop
    scores = {
        f"{judge.name}.{criterion}": verdict[criterion]["score"] for criterion in judge.rubrics
    }
    spoken = Spoken(answer.text, "", answer.usage, loop.outcome.answered_by, elapsed_ms(started))
    return Verdict(judge.name, scores, spoken)
