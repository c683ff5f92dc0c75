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
from inference.models import JudgeRun, JudgeScore
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
