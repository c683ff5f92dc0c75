"""The figures of an evaluation (``inference.evaluations.summary``): bootstrap intervals
with a fixed seed, wins, ties and losses against the original, means of cost and
latency."""

import random

import pytest

from inference.evaluations.summary import (
    ORIGINAL,
    Outcome,
    bootstrap_ci,
    compare,
    summarize,
)


def scores(count: int, seed: int) -> list[float]:
    draw = random.Random(seed)
    return [float(draw.randint(0, 10)) for _ in range(count)]


def test_the_interval_contains_the_mean_and_is_the_same_on_every_run() -> None:
    values = scores(40, seed=1)
    low, high = bootstrap_ci(values)
    mean = sum(values) / len(values)
    assert low < mean < high
    assert bootstrap_ci(values) == (low, high)  # the seed is fixed


def test_the_interval_narrows_with_more_samples() -> None:
    few = scores(10, seed=2)
    many = few * 20  # the same spread, twenty times the cases
    few_low, few_high = bootstrap_ci(few)
    many_low, many_high = bootstrap_ci(many)
    assert many_high - many_low < (few_high - few_low) / 2
    mean = sum(few) / len(few)
    assert many_low < mean < many_high


def test_identical_scores_have_no_spread() -> None:
    assert bootstrap_ci([7.0, 7.0, 7.0]) == (7.0, 7.0)
    assert bootstrap_ci([4.0]) == (4.0, 4.0)


def test_no_values_have_no_interval() -> None:
    with pytest.raises(ValueError):
        bootstrap_ci([])


def outcome(cost: int | None = 100, latency: float | None = 50.0, **scored: float) -> Outcome:
    return Outcome({key.replace("_", "."): value for key, value in scored.items()}, cost, latency)


def test_a_case_is_won_tied_or_lost_by_the_mean_over_the_criteria_both_have() -> None:
    original = outcome(q_accuracy=6, q_helpfulness=6)
    assert compare(outcome(q_accuracy=8, q_helpfulness=5), original) == "win"  # 6.5
    assert compare(outcome(q_accuracy=7, q_helpfulness=5), original) == "tie"  # 6.0
    assert compare(outcome(q_accuracy=4, q_helpfulness=7), original) == "loss"  # 5.5
    # A criterion scored on one side only is left out of both means.
    assert compare(outcome(q_accuracy=6), original) == "tie"
    assert compare(outcome(), original) is None


def test_summary_per_agent() -> None:
    cases = [
        {"cheap": outcome(200, 40.0, q_a=8), ORIGINAL: outcome(500, None, q_a=6)},
        {"cheap": outcome(100, 60.0, q_a=6), ORIGINAL: outcome(None, None, q_a=6)},
        {"cheap": outcome(300, 50.0, q_a=3), ORIGINAL: outcome(700, None, q_a=6)},
        {
            "cheap": Outcome({}, 50, 10.0, failed=True),
            ORIGINAL: outcome(500, None, q_a=6),
        },
    ]

    cheap, original = summarize(["cheap"], cases)

    assert cheap.agent == "cheap"
    assert cheap.scores["q.a"].mean == pytest.approx(17 / 3, abs=1e-4)
    assert cheap.scores["q.a"].n == 3
    low, high = cheap.scores["q.a"].ci
    assert low <= cheap.scores["q.a"].mean <= high
    assert (cheap.win, cheap.tie, cheap.loss, cheap.failed) == (1, 1, 1, 1)
    assert cheap.mean_cost_usd == pytest.approx(650 / 4 / 1e6)  # every case's calls
    assert cheap.mean_latency_ms == 50.0  # of its replies only
    assert original.agent == ORIGINAL
    assert original.scores["q.a"].mean == 6.0
    assert original.scores["q.a"].ci == (6.0, 6.0)
    assert (original.win, original.tie, original.loss) == (None, None, None)
    assert original.mean_cost_usd == pytest.approx(1700 / 3 / 1e6)  # the known costs
    assert original.mean_latency_ms is None


def test_summary_of_no_case_has_no_figures() -> None:
    [cheap, original] = summarize(["cheap"], [])
    assert cheap.scores == {} and cheap.mean_cost_usd is None and cheap.win == 0
    assert original.scores == {} and original.mean_cost_usd is None
