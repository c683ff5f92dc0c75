"""Routing between an experiment's variants, decision by decision.

Fixed seeds: the statistics are checked on a few thousand routing decisions, not on
requests."""

import random
from collections import Counter
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from agents.loader import load_config_data
from agents.schema import Config
from inference.models import JudgeRun, JudgeScore, LedgerEntry
from inference.neutral.errors import ApiError
from inference.routing.experiments import (
    DEFAULT_WINDOW_SECONDS,
    Arm,
    bandit_arms,
    bandit_choice,
    route,
    sticky_draw,
)


def config_with(*experiments: dict[str, Any]) -> Config:
    return load_config_data(
        {
            "providers": {"openai": {"api_key": "k"}},
            "agents": [
                {"name": name, "provider": "openai", "model": name, "judges": ["quality"]}
                for name in ("a", "b", "c")
            ],
            "judges": [
                {
                    "name": "quality",
                    "provider": "openai",
                    "model": "j",
                    "rubrics": {"accuracy": "?"},
                }
            ],
            "experiments": list(experiments),
        }
    )


SPLIT = {
    "name": "split",
    "strategy": "split",
    "sticky_by_user": False,
    "variants": [
        {"agent": "a", "weight": 0.2},
        {"agent": "b", "weight": 0.3},
        {"agent": "c", "weight": 0.5},
    ],
}
STICKY = {**SPLIT, "name": "sticky", "sticky_by_user": True}
BANDIT = {
    "name": "bandit",
    "strategy": "bandit",
    "metric": "quality.accuracy",
    "epsilon": 0.1,
    "min_samples": 5,
    "variants": [{"agent": "a"}, {"agent": "b"}, {"agent": "c"}],
}


def test_agent_names_route_to_themselves_and_unknown_names_are_400() -> None:
    config = config_with(SPLIT)
    assert route(config, "b", "u", {}, random.Random(1)).agent.name == "b"
    assert route(config, "b", "u", {}, random.Random(1)).experiment == ""
    with pytest.raises(ApiError) as refused:
        route(config, "nope", "u", {}, random.Random(1))
    assert (refused.value.status, refused.value.param) == (400, "model")


def test_split_follows_the_weights() -> None:
    config, rng = config_with(SPLIT), random.Random(20261122)
    counts = Counter(route(config, "split", "u", {}, rng).agent.name for _ in range(5000))
    for name, weight in (("a", 0.2), ("b", 0.3), ("c", 0.5)):
        assert abs(counts[name] / 5000 - weight) < 0.03, counts


def test_sticky_split_follows_the_weights_across_users_and_never_moves_a_user() -> None:
    config, rng = config_with(STICKY), random.Random(7)
    first = {
        f"user-{n}": route(config, "sticky", f"user-{n}", {}, rng).agent.name for n in range(4000)
    }
    counts = Counter(first.values())
    for name, weight in (("a", 0.2), ("b", 0.3), ("c", 0.5)):
        assert abs(counts[name] / 4000 - weight) < 0.03, counts
    for user, name in list(first.items())[:500]:
        for _ in range(3):
            assert route(config, "sticky", user, {}, random.Random()).agent.name == name


def test_sticky_draw_is_a_fixed_function_of_user_and_experiment() -> None:
    assert sticky_draw("alice", "sticky") == sticky_draw("alice", "sticky")
    assert sticky_draw("alice", "sticky") != sticky_draw("alice", "other")
    assert 0 <= sticky_draw("bob", "sticky") < 1


def test_shadow_primary_answers_and_the_others_run_at_the_sampling_rate() -> None:
    shadow = {"name": "shadow", "strategy": "shadow", "primary": "b", "sampling_rate": 0.25,
              "variants": [{"agent": "a"}, {"agent": "b"}, {"agent": "c"}]}  # fmt: skip
    config, rng = config_with(shadow), random.Random(3)
    routings = [route(config, "shadow", "u", {}, rng) for _ in range(4000)]
    assert {routing.agent.name for routing in routings} == {"b"}
    shadowed = [routing for routing in routings if routing.shadows]
    assert abs(len(shadowed) / 4000 - 0.25) < 0.03
    assert {tuple(a.name for a in routing.shadows) for routing in shadowed} == {("a", "c")}


def test_bandit_tries_variants_under_min_samples_first() -> None:
    experiment = config_with(BANDIT).experiment("bandit")
    arms = {"a": Arm(9.0, 10), "b": Arm(2.0, 3), "c": Arm(5.0, 4)}
    choices = Counter(bandit_choice(experiment, arms, random.Random(n)) for n in range(200))
    assert choices == {"b": 200}  # the fewest samples first, whatever the means


def test_bandit_exploits_the_best_mean_and_explores_at_epsilon() -> None:
    experiment = config_with(BANDIT).experiment("bandit")
    arms = {"a": Arm(4.0, 50), "b": Arm(8.5, 50), "c": Arm(6.0, 50)}
    rng = random.Random(11)
    choices = Counter(bandit_choice(experiment, arms, rng) for _ in range(6000))
    # 90 % greedy on b, and b also gets a third of the 10 % exploration.
    assert abs(choices["b"] / 6000 - (0.9 + 0.1 / 3)) < 0.02, choices
    assert abs(choices["a"] / 6000 - 0.1 / 3) < 0.01, choices


def test_bandit_converges_to_the_better_scored_variant() -> None:
    """Simulated: each choice earns a score from the variant's true quality."""
    experiment = config_with(BANDIT).experiment("bandit")
    quality = {"a": 5.0, "b": 7.5, "c": 6.0}
    scores: dict[str, list[float]] = {name: [] for name in quality}
    rng = random.Random(2026)
    picks = []
    for _ in range(3000):
        arms = {n: Arm(sum(v) / len(v), len(v)) for n, v in scores.items() if v}
        chosen = bandit_choice(experiment, arms, rng)
        picks.append(chosen)
        scores[chosen].append(min(10.0, max(0.0, rng.gauss(quality[chosen], 1.5))))
    late = Counter(picks[-1000:])
    assert late.most_common(1)[0][0] == "b"
    assert late["b"] > 850, late


def test_bandit_without_min_samples_routes_before_any_score_exists() -> None:
    experiment = config_with({**BANDIT, "min_samples": 0, "epsilon": 0}).experiment("bandit")
    choices = Counter(
        bandit_choice(experiment, {"b": Arm(7.0, 1)}, random.Random(n)) for n in range(50)
    )
    assert choices == {"b": 50}  # unscored variants count as a mean of 0
    assert bandit_choice(experiment, {}, random.Random(1)) in {"a", "b", "c"}


@pytest.mark.django_db
def test_bandit_means_count_only_this_experiments_scores_inside_the_window() -> None:
    config = config_with(BANDIT)
    now = timezone.now()

    def score(
        value: int, variant: str, experiment: str = "bandit", age: float = 60, **fields: str
    ) -> None:
        created = now - timedelta(seconds=age)
        common = {"completion_id": "c", "user_id": "u", "agent": variant, "judge_model": "j"}
        common |= {"experiment": experiment, "variant": variant, "judge": "quality"} | fields
        run = JudgeRun.objects.create(status="ok", **common)
        JudgeScore.objects.create(
            run=run, created_at=created, criterion="accuracy", score=value, reasoning="r", **common
        )

    score(8, "a")
    score(6, "a")
    score(2, "a", experiment="")  # the agent answered on its own
    score(2, "a", experiment="other")
    score(1, "a", age=DEFAULT_WINDOW_SECONDS + 60)  # too old
    score(0, "a", judge="another")
    score(9, "b")
    assert bandit_arms(config, "bandit", now) == {"a": Arm(7.0, 2), "b": Arm(9.0, 1)}
    assert bandit_arms(config, "a", now) == {}


def _pay(variant: str, micro_usd: int | None, age: float = 60, experiment: str = "bandit") -> None:
    LedgerEntry.objects.create(
        user_id="u",
        agent=variant,
        experiment=experiment,
        variant=variant,
        provider="openai",
        completion_id="c",
        prompt_tokens=1,
        completion_tokens=1,
        total_tokens=2,
        cost_micro_usd=micro_usd,
        created_at=timezone.now() - timedelta(seconds=age),
    )


def _two(**fields: Any) -> dict[str, Any]:
    return {**BANDIT, "variants": [{"agent": "a"}, {"agent": "b"}], **fields}


def _simulated(experiment: Any, quality: dict[str, float], cost: dict[str, float]) -> Counter[str]:
    """3000 choices, each earning a score near the variant's quality at its fixed cost;
    the picks of the last 1000."""
    scores: dict[str, list[float]] = {name: [] for name in quality}
    rng = random.Random(2027)
    picks = []
    for _ in range(3000):
        arms = {n: Arm(sum(v) / len(v), len(v), cost[n]) for n, v in scores.items() if v}
        chosen = bandit_choice(experiment, arms, rng)
        picks.append(chosen)
        scores[chosen].append(min(10.0, max(0.0, rng.gauss(quality[chosen], 0.5))))
    return Counter(picks[-1000:])


@pytest.mark.parametrize(("cost_weight", "winner"), [(200, "b"), (0, "a")])
def test_a_bandit_with_a_cost_weight_settles_on_quality_per_dollar(
    cost_weight: float, winner: str
) -> None:
    """The design's example: a scores 9 at $0.010, b 8 at $0.001. With 200 points a
    dollar b earns 7.8 against a's 7.0; without, a's 9 wins. The worse one gets only its
    share of the exploration (5 % of picks, with epsilon 0.1 over two variants)."""
    objective = {"metric": "quality.accuracy", "cost_weight": cost_weight}
    experiment = config_with(_two(metric=None, objective=objective)).experiment("bandit")

    late = _simulated(experiment, {"a": 9.0, "b": 8.0}, {"a": 0.010, "b": 0.001})

    loser = "a" if winner == "b" else "b"
    assert late[winner] > 900, late
    assert late[loser] < 90, late


def test_a_variant_over_max_cost_is_never_chosen_while_another_is_under_it() -> None:
    experiment = config_with(_two(max_cost_usd=0.005, epsilon=0.5)).experiment("bandit")
    arms = {"a": Arm(9.0, 50, 0.010), "b": Arm(2.0, 50, 0.001)}
    choices = Counter(bandit_choice(experiment, arms, random.Random(n)) for n in range(500))
    assert choices == {"b": 500}  # exploring included
    both_over = {"a": Arm(9.0, 50, 0.010), "b": Arm(2.0, 50, 0.020)}
    greedy = Counter(bandit_choice(experiment, both_over, random.Random(n)) for n in range(500))
    assert greedy["a"] > 300  # none is under the cap: the reward decides again
    unknown = {"a": Arm(0.0, 0, None), "b": Arm(2.0, 50, 0.001)}
    assert bandit_choice(experiment, unknown, random.Random(1)) == "a"  # to be explored


@pytest.mark.django_db
def test_a_bandits_costs_are_its_variants_last_requests_inside_the_window() -> None:
    objective = {"metric": "quality.accuracy", "cost_weight": 100}
    config = config_with(_two(metric=None, objective=objective, min_samples=2))
    _pay("a", 30_000, age=30)
    _pay("a", 10_000, age=20)
    _pay("a", 20_000, age=10)  # the last two: $0.015 on average
    _pay("a", 999_000, experiment="other")
    _pay("b", None)  # no known price
    _pay("b", 1_000, age=DEFAULT_WINDOW_SECONDS + 60)  # too old

    arms = bandit_arms(config, "bandit", timezone.now())

    assert arms == {"a": Arm(0.0, 0, 0.015)}
