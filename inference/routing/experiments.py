"""Which agent answers a ``model`` name: the agent itself, or a variant of an experiment
(docs/configuration.md, ``experiments``).

- ``split``: a weighted choice; with ``sticky_by_user`` the choice comes from a stable
  hash of (user id, experiment name), so a user keeps one variant across processes and
  restarts with nothing written anywhere.
- ``shadow``: the primary answers; with probability ``sampling_rate`` every other variant
  also runs in the background (it is judged, never stored, never billed).
- ``bandit``: epsilon-greedy on each variant's reward over the window, counting only
  what was earned inside this experiment: the mean of its metric, less
  ``objective.cost_weight`` points per USD of its mean cost per request (over its last
  ``min_samples`` requests). A variant with fewer than ``min_samples`` scores is tried
  first; with ``max_cost_usd``, a variant whose mean cost is above it is never chosen
  (exploring included) while another is under it. The figures come from the database,
  so every process decides on the same data.

Routing reads only the config snapshot (and, for a bandit, those means): a reloaded
config routes at once.
"""

import hashlib
import random
from dataclasses import dataclass
from datetime import datetime, timedelta

from django.db.models import Avg, Count

from agents.schema import AgentConfig, Config, ExperimentConfig
from inference.models import JudgeScore, LedgerEntry
from inference.neutral.errors import invalid_request

DEFAULT_EPSILON = 0.1
DEFAULT_MIN_SAMPLES = 30
DEFAULT_WINDOW_SECONDS = 7 * 86400


@dataclass(frozen=True)
class Arm:
    """A bandit variant's record inside its experiment: mean metric, number of scores, and
    mean cost per request in USD (None: no request of it with a known cost yet)."""

    mean: float
    samples: int
    cost: float | None = None

    def reward(self, cost_weight: float) -> float:
        return self.mean - cost_weight * (self.cost or 0.0)


_UNSCORED = Arm(0.0, 0)


@dataclass(frozen=True)
class Routing:
    agent: AgentConfig  # the agent that answers
    experiment: str = ""  # the experiment the client named, if it named one
    shadows: tuple[AgentConfig, ...] = ()  # variants that also run, in the background

    @property
    def variant(self) -> str:
        return self.agent.name if self.experiment else ""


def route(
    config: Config, model: str, user_id: str, arms: dict[str, Arm], rng: random.Random
) -> Routing:
    """The agent for ``model`` (400 if it names neither an agent nor an experiment)."""
    agent = config.agent(model)
    if agent is not None:
        return Routing(agent)
    experiment = config.experiment(model)
    if experiment is None:
        raise invalid_request(
            f"Unknown model '{model}': it is neither an agent nor an experiment of this "
            "gateway (see GET /v1/models)",
            param="model",
            code="model_not_found",
        )
    if experiment.strategy == "shadow":
        primary = _agent(config, experiment.primary or experiment.variants[0].agent)
        rate = 1.0 if experiment.sampling_rate is None else experiment.sampling_rate
        others = tuple(
            _agent(config, variant.agent)
            for variant in experiment.variants
            if variant.agent != primary.name
        )
        shadows = others if rng.random() < rate else ()
        return Routing(primary, experiment.name, shadows)
    if experiment.strategy == "bandit":
        chosen = bandit_choice(experiment, arms, rng)
    else:
        chosen = split_choice(experiment, user_id, rng)
    return Routing(_agent(config, chosen), experiment.name)


def split_choice(experiment: ExperimentConfig, user_id: str, rng: random.Random) -> str:
    draw = sticky_draw(user_id, experiment.name) if experiment.sticky_by_user else rng.random()
    total = sum(variant.weight for variant in experiment.variants)
    point = draw * total
    for variant in experiment.variants:
        point -= variant.weight
        if point < 0:
            return variant.agent
    return experiment.variants[-1].agent


def sticky_draw(user_id: str, experiment: str) -> float:
    """A number in [0, 1) fixed by (user id, experiment name), the same everywhere."""
    digest = hashlib.sha256(f"{experiment}\x00{user_id}".encode()).digest()
    return int.from_bytes(digest[:8], "big") / 2**64


def bandit_choice(experiment: ExperimentConfig, arms: dict[str, Arm], rng: random.Random) -> str:
    record = {variant.agent: arms.get(variant.agent, _UNSCORED) for variant in experiment.variants}
    names = _affordable(experiment, record)
    minimum = min_samples(experiment)
    unexplored = [name for name in names if record[name].samples < minimum]
    if unexplored:
        fewest = min(record[name].samples for name in unexplored)
        return rng.choice([name for name in unexplored if record[name].samples == fewest])
    epsilon = DEFAULT_EPSILON if experiment.epsilon is None else experiment.epsilon
    if rng.random() < epsilon:
        return rng.choice(names)
    weight = experiment.objective.cost_weight if experiment.objective is not None else 0.0
    best = max(record[name].reward(weight) for name in names)
    return rng.choice([name for name in names if record[name].reward(weight) == best])


def _affordable(experiment: ExperimentConfig, record: dict[str, Arm]) -> list[str]:
    """The variants the bandit may choose: with ``max_cost_usd``, those whose mean cost is
    not above it (a variant without a known cost yet is), unless none is."""
    names = list(record)
    cap = experiment.max_cost_usd
    if cap is None:
        return names
    under = [name for name in names if (cost := record[name].cost) is None or cost <= cap]
    return under or names


def min_samples(experiment: ExperimentConfig) -> int:
    return DEFAULT_MIN_SAMPLES if experiment.min_samples is None else experiment.min_samples


def bandit_arms(config: Config, model: str, now: datetime) -> dict[str, Arm]:
    """The figures a bandit experiment decides on (empty for anything else). ORM code, run
    in the turn's batched database call."""
    experiment = config.experiment(model)
    metric = experiment.bandit_metric if experiment is not None else None
    if experiment is None or experiment.strategy != "bandit" or metric is None:
        return {}
    judge, _, criterion = metric.partition(".")
    window = experiment.bandit_window_seconds or DEFAULT_WINDOW_SECONDS
    rows = (
        JudgeScore.objects.filter(
            experiment=experiment.name,
            judge=judge,
            criterion=criterion,
            created_at__gt=now - timedelta(seconds=window),
        )
        .values("variant")
        .annotate(mean=Avg("score"), samples=Count("id"))
    )
    scored = {row["variant"]: (float(row["mean"]), row["samples"]) for row in rows}
    weighs_cost = experiment.objective is not None or experiment.max_cost_usd is not None
    costs = recent_costs(experiment, now) if weighs_cost else {}
    return {
        variant.agent: Arm(*scored.get(variant.agent, (0.0, 0)), costs.get(variant.agent))
        for variant in experiment.variants
        if variant.agent in scored or variant.agent in costs
    }


def recent_costs(experiment: ExperimentConfig, now: datetime) -> dict[str, float]:
    """Each variant's mean cost per request in USD over its last ``min_samples`` requests
    in the window (at least one), those with a known cost."""
    window = experiment.bandit_window_seconds or DEFAULT_WINDOW_SECONDS
    last = max(1, min_samples(experiment))
    costs: dict[str, float] = {}
    for variant in experiment.variants:
        paid = (
            LedgerEntry.objects.filter(
                experiment=experiment.name,
                variant=variant.agent,
                kind="turn",
                created_at__gt=now - timedelta(seconds=window),
                cost_micro_usd__isnull=False,
            )
            .order_by("-created_at")
            .values_list("cost_micro_usd", flat=True)[:last]
        )
        recent = [cost for cost in paid if cost is not None]
        if recent:
            costs[variant.agent] = sum(recent) / len(recent) / 1e6
    return costs


def _agent(config: Config, name: str) -> AgentConfig:
    agent = config.agent(name)
    assert agent is not None, f"validation guarantees variant '{name}' is an agent"
    return agent
