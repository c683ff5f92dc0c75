"""The figures of an evaluation: per agent (each candidate, then the original replies),
the mean score of each judge criterion with a 95 % bootstrap confidence interval, the
mean cost and latency per case, and each candidate's wins, ties and losses against the
original.

The intervals resample with a fixed seed, so the same cases always give the same
figures. A case counts for a criterion when that criterion was scored on it; a candidate
wins a case when its mean score over the criteria scored on both replies is above the
original's (equal means: a tie); a case with no criterion scored on both is none of
the three.
"""

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

ORIGINAL = "original"
RESAMPLES = 1000
SEED = 20240601
LEVEL = 0.95


@dataclass(frozen=True)
class Outcome:
    """One agent's side of one case."""

    scores: Mapping[str, float]  # by "judge.criterion"
    cost_micro_usd: int | None  # its own calls (None: unknown)
    latency_ms: float | None  # None: not measured (an original whose record expired)
    failed: bool = False  # it gave no reply


@dataclass(frozen=True)
class ScoreStats:
    mean: float
    ci: tuple[float, float]
    n: int  # the cases scored on it


@dataclass(frozen=True)
class SummaryEntry:
    agent: str  # a candidate's name, or "original"
    scores: dict[str, ScoreStats]  # by "judge.criterion"
    mean_cost_usd: float | None
    mean_latency_ms: float | None
    win: int | None  # against the original (None for the original itself)
    tie: int | None
    loss: int | None
    failed: int  # cases it gave no reply to


def bootstrap_ci(
    values: Sequence[float], resamples: int = RESAMPLES, seed: int = SEED
) -> tuple[float, float]:
    """The percentile bootstrap interval of the mean of ``values`` at ``LEVEL``: the means
    of ``resamples`` samples drawn with replacement."""
    import numpy as np  # loaded by the first summary, not by every process (17 MB)

    data = np.asarray(values, dtype=float)
    if data.size == 0:
        raise ValueError("no values to resample")
    picks = np.random.default_rng(seed).integers(0, data.size, size=(resamples, data.size))
    means = data[picks].mean(axis=1)
    tail = (1 - LEVEL) / 2 * 100
    low, high = np.percentile(means, [tail, 100 - tail])
    return float(low), float(high)


def compare(candidate: Outcome, original: Outcome) -> Literal["win", "tie", "loss"] | None:
    """How ``candidate`` did on one case against the original, by the mean of the
    criteria scored on both (None: none was)."""
    common = [key for key in candidate.scores if key in original.scores]
    if not common:
        return None
    ours = sum(candidate.scores[key] for key in common) / len(common)
    theirs = sum(original.scores[key] for key in common) / len(common)
    if math.isclose(ours, theirs, abs_tol=1e-9):
        return "tie"
    return "win" if ours > theirs else "loss"


def summarize(
    candidates: Sequence[str], cases: Sequence[Mapping[str, Outcome]]
) -> list[SummaryEntry]:
    """``cases``: each the outcome of every candidate and of ``ORIGINAL`` (a candidate
    missing from a case: not run yet)."""
    entries = []
    for agent in [*candidates, ORIGINAL]:
        outcomes = [case[agent] for case in cases if agent in case]
        tally = {"win": 0, "tie": 0, "loss": 0}
        if agent != ORIGINAL:
            for case in cases:
                if agent in case and ORIGINAL in case:
                    result = compare(case[agent], case[ORIGINAL])
                    if result is not None:
                        tally[result] += 1
        costs = [o.cost_micro_usd / 1e6 for o in outcomes if o.cost_micro_usd is not None]
        latencies = [o.latency_ms for o in outcomes if o.latency_ms is not None and not o.failed]
        entries.append(
            SummaryEntry(
                agent=agent,
                scores=_score_stats(outcomes),
                mean_cost_usd=_mean(costs),
                mean_latency_ms=_rounded(_mean(latencies), 1),
                win=tally["win"] if agent != ORIGINAL else None,
                tie=tally["tie"] if agent != ORIGINAL else None,
                loss=tally["loss"] if agent != ORIGINAL else None,
                failed=sum(1 for outcome in outcomes if outcome.failed),
            )
        )
    return entries


def _score_stats(outcomes: Sequence[Outcome]) -> dict[str, ScoreStats]:
    keys = sorted({key for outcome in outcomes for key in outcome.scores})
    stats = {}
    for key in keys:
        values = [outcome.scores[key] for outcome in outcomes if key in outcome.scores]
        low, high = bootstrap_ci(values)
        stats[key] = ScoreStats(
            mean=round(sum(values) / len(values), 4),
            ci=(round(low, 4), round(high, 4)),
            n=len(values),
        )
    return stats


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _rounded(value: float | None, digits: int) -> float | None:
    return None if value is None else round(value, digits)
