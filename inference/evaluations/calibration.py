"""Calibrating a semantic cache's ``similarity`` on the agent's own traffic
(``cache_calibrate``, docs/caching.md "Calibration"): pairs of its recorded questions
whose similarity is within ``WINDOW`` of the threshold, each judged (does the earlier
question's recorded answer answer the later question?), and per threshold the share of
pairs that would be hits and the share of those hits the judge refused.

The recorded questions are the agent's stored conversation turns and the answers its
cache keeps, newest first; pairs are taken across users and contexts (what is measured
is the embedder and the threshold, not whose the questions were). A pair the agent's
gate stops is no would-be hit, and is not judged.
"""

import asyncio
import json
import uuid
from collections.abc import Sequence
from dataclasses import dataclass

from agents.schema import AgentConfig, Config, JudgeConfig
from core.float32 import Vector
from inference.cache.entries import loads
from inference.cache.gate import disagreement
from inference.calls.asking import Billing, ask
from inference.database import in_database
from inference.engine import Engine
from inference.models import CachedReply, StoredMessage
from inference.money.caller import Caller
from inference.money.settlement import charge, settle
from inference.routing.deployments import route_of
from inference.routing.embedding import embed
from inference.turn.judges import judge_request

WINDOW = 0.1  # pairs this close to the threshold are judged
STEP = 0.01
ANSWERS = 7  # a score of at least this (of 10) says the answer answers the question
CRITERION = "answers"
RUBRIC = (
    "Does the assistant's reply fully and correctly answer the user's question? The reply "
    "was written for a similar question: score it low when it answers another question "
    "(the opposite, other numbers, other people or things), high when it answers this one."
)


@dataclass(frozen=True)
class Recorded:
    question: str
    answer: str


@dataclass(frozen=True)
class Pair:
    first: Recorded  # the earlier: its answer is the one a hit would serve
    second: Recorded
    similarity: float
    answers: bool = False  # the judge's verdict


@dataclass(frozen=True)
class Row:
    threshold: float
    hits: int  # pairs at or above the threshold
    false_hits: int  # of which the judge said the answer does not answer
    pairs: int

    @property
    def hit_rate(self) -> float:
        return self.hits / self.pairs if self.pairs else 0.0

    @property
    def false_hit_rate(self) -> float:
        return self.false_hits / self.hits if self.hits else 0.0


def recorded(agent: str, limit: int) -> list[Recorded]:
    """The agent's recorded questions with their answers, newest first, each question
    once, at most ``limit``: its stored turns, then the answers its cache keeps."""
    found: dict[str, Recorded] = {}
    replies = StoredMessage.objects.filter(model=agent, role="assistant").order_by("-id")
    for reply in replies[:limit]:
        question = (
            StoredMessage.objects.filter(user_id=reply.user_id, model=agent, id__lt=reply.id)
            .order_by("-id")
            .first()
        )
        if question is not None and question.role == "user":
            found.setdefault(question.content, Recorded(question.content, reply.content))
    kept = CachedReply.objects.filter(agent=agent).order_by("-created_at")
    for text in kept.values_list("reply", flat=True)[: limit * 2]:
        entry = loads(text)
        if entry.question and entry.reply.text:
            found.setdefault(entry.question, Recorded(entry.question, entry.reply.text))
    return list(found.values())[:limit]


def near_pairs(
    questions: Sequence[Recorded],
    vectors: Sequence[Vector],
    threshold: float,
    gated: bool,
) -> list[Pair]:
    """The pairs whose similarity is within ``WINDOW`` of ``threshold`` (the first the
    older; ``questions`` are newest first), less those the gate stops (``gated``)."""
    import numpy as np

    matrix = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = matrix / np.where(norms == 0, 1, norms)
    cosines = unit @ unit.T
    pairs: list[Pair] = []
    for newer in range(len(questions)):
        for older in range(newer + 1, len(questions)):
            similarity = float(cosines[older, newer])
            if abs(similarity - threshold) > WINDOW + 1e-9:
                continue
            first, second = questions[older], questions[newer]
            if gated and disagreement(first.question, second.question) is not None:
                continue
            pairs.append(Pair(first, second, similarity))
    return pairs


def table(pairs: Sequence[Pair], threshold: float) -> list[Row]:
    """One row per threshold from ``threshold`` - ``WINDOW`` to 1.0, by ``STEP``."""
    start = round((threshold - WINDOW) / STEP)
    rows: list[Row] = []
    for step in range(max(start, 0), round(1 / STEP) + 1):
        at = round(step * STEP, 2)
        hits = [pair for pair in pairs if pair.similarity >= at - 1e-9]
        refused = sum(1 for pair in hits if not pair.answers)
        rows.append(Row(at, len(hits), refused, len(pairs)))
    return rows


def suggested(rows: Sequence[Row]) -> float:
    """The lowest threshold whose false-hit rate is 0, or else the closest to it."""
    return min(rows, key=lambda row: (row.false_hit_rate, row.threshold)).threshold


async def calibrate(
    agent: AgentConfig, judge: JudgeConfig, limit: int, config: Config, engine: Engine
) -> list[Row]:
    """The calibration table of ``agent``'s cache, its pairs judged by ``judge``; every
    call billed to the agent as kind ``evaluation``."""
    settings = agent.cache
    assert settings is not None and settings.embedder is not None, "checked by the command"
    embedder = config.embedder(settings.embedder)
    assert embedder is not None, "checked by the config"
    questions = await in_database(recorded, agent.name, limit)
    if len(questions) < 2:
        return table([], settings.similarity)
    caller = Caller(f"calibrate:{agent.name}", purpose="evaluation")
    embedded = await embed(config, engine, embedder, [item.question for item in questions])
    cost = charge(
        caller,
        embedded.usage,
        agent=agent.name,
        call_id=_call_id(),
        answered_by=embedded.answered_by,
    )
    await in_database(settle, [cost])
    pairs = near_pairs(
        questions, embedded.vectors, settings.similarity, gated=settings.gate == "strict"
    )
    asking = judge.model_copy(update={"rubrics": {CRITERION: RUBRIC}})
    bound = asyncio.Semaphore(config.evaluations.concurrency)

    async def judged(pair: Pair) -> Pair:
        request = judge_request(asking, pair.second.question, pair.first.answer)
        async with bound:
            asked = await ask(
                caller, config, engine, route_of(judge), request, Billing(agent.name, _call_id())
            )
        if asked.text is None:
            raise CalibrationError(f"judge {judge.name} failed: {asked.error}")
        score = json.loads(asked.text)[CRITERION]["score"]
        return Pair(pair.first, pair.second, pair.similarity, score >= ANSWERS)

    judged_pairs = await asyncio.gather(*(judged(pair) for pair in pairs))
    return table(judged_pairs, settings.similarity)


class CalibrationError(Exception):
    pass


def _call_id() -> str:
    return f"calibrate-{uuid.uuid4().hex[:16]}"
