"""What an evaluation is asked to do (``POST /admin/evaluations``, the ``evaluate``
command), checked against the config it will run with: a ``Plan``, or every problem,
each starting with the field it is about."""

from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, model_validator

from agents.schema import Config

MAX_CANDIDATES = 4
MAX_LIMIT = 1000


class InvalidEvaluation(ValueError):
    """The request cannot be run: ``problems`` says why, one field each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


class SourceIn(BaseModel):
    """Whose recorded turns: an agent's, or an experiment's (exactly one of the two), in
    a window of time, of some users, the newest ``limit``."""

    model_config = ConfigDict(extra="forbid")

    agent: str | None = None
    experiment: str | None = None
    since: datetime | None = None
    until: datetime | None = None
    users: list[str] = []
    limit: int = Field(default=50, ge=1, le=MAX_LIMIT)

    @model_validator(mode="after")
    def _one_of_them(self) -> "SourceIn":
        if (self.agent is None) == (self.experiment is None):
            raise ValueError("give exactly one of agent or experiment")
        return self


class EvaluationIn(BaseModel):
    """The body of ``POST /admin/evaluations``. Unknown fields are refused: a misspelt
    filter would otherwise widen the cases silently."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=255)
    candidates: list[str] = Field(min_length=1, max_length=MAX_CANDIDATES)
    source: SourceIn
    judges: list[str] | None = None


@dataclass(frozen=True)
class Plan:
    """An evaluation that can run: every name known to the config."""

    name: str
    candidates: tuple[str, ...]
    source_kind: Literal["agent", "experiment"]
    source_name: str  # the model name its turns were asked under (history is kept so)
    since: datetime | None
    until: datetime | None
    users: tuple[str, ...]
    limit: int
    judges: tuple[str, ...]

    @property
    def source(self) -> dict[str, str]:
        return {self.source_kind: self.source_name}


def plan_of(body: Any, config: Config) -> Plan:
    """The plan ``body`` asks for under ``config``; ``InvalidEvaluation`` naming every
    field that is wrong."""
    try:
        asked = EvaluationIn.model_validate(body)
    except ValidationError as error:
        raise InvalidEvaluation(
            [
                f"{'.'.join(str(part) for part in item['loc']) or '(body)'}: {item['msg']}"
                for item in error.errors()
            ]
        ) from error
    problems = [*_name_problems(asked, config), *_window_problems(asked)]
    kind: Literal["agent", "experiment"] = (
        "agent" if asked.source.agent is not None else "experiment"
    )
    source = asked.source.agent or asked.source.experiment or ""
    judges = asked.judges if asked.judges is not None else _default_judges(kind, source, config)
    problems += _judge_problems(asked.judges, judges, kind, source, config)
    if problems:
        raise InvalidEvaluation(problems)
    return Plan(
        name=asked.name.strip(),
        candidates=tuple(asked.candidates),
        source_kind=kind,
        source_name=source,
        since=_aware(asked.source.since),
        until=_aware(asked.source.until),
        users=tuple(dict.fromkeys(asked.source.users)),
        limit=asked.source.limit,
        judges=tuple(judges),
    )


def _name_problems(asked: EvaluationIn, config: Config) -> list[str]:
    problems = [] if asked.name.strip() else ["name: must not be blank"]
    for index, name in enumerate(asked.candidates):
        if config.agent(name) is None:
            problems.append(f"candidates[{index}]: agent '{name}' is not defined")
        elif name in asked.candidates[:index]:
            problems.append(f"candidates[{index}]: '{name}' is listed twice")
    if asked.source.agent is not None and config.agent(asked.source.agent) is None:
        problems.append(f"source.agent: agent '{asked.source.agent}' is not defined")
    experiment = asked.source.experiment
    if experiment is not None and config.experiment(experiment) is None:
        problems.append(f"source.experiment: experiment '{experiment}' is not defined")
    for index, user in enumerate(asked.source.users):
        if not user.strip():
            problems.append(f"source.users[{index}]: must not be blank")
    return problems


def _window_problems(asked: EvaluationIn) -> list[str]:
    since, until = _aware(asked.source.since), _aware(asked.source.until)
    if since is not None and until is not None and until <= since:
        return ["source.until: must be after source.since"]
    return []


def _judge_problems(
    asked: list[str] | None, judges: list[str], kind: str, source: str, config: Config
) -> list[str]:
    problems = [
        f"judges[{index}]: judge '{name}' is not defined"
        for index, name in enumerate(asked or [])
        if config.judge(name) is None
    ]
    known = config.agent(source) if kind == "agent" else config.experiment(source)
    if asked is not None and not asked:
        problems.append("judges: name at least one judge (or leave judges out)")
    elif not judges and known is not None:
        problems.append(
            f"judges: the source {kind} '{source}' has no judge to default to: name at least one"
        )
    return problems


def _default_judges(kind: str, source: str, config: Config) -> list[str]:
    """The source agent's judges; for an experiment, those its variants use, in order."""
    if kind == "agent":
        agent = config.agent(source)
        return list(agent.judges) if agent is not None else []
    experiment = config.experiment(source)
    variants = experiment.variants if experiment is not None else []
    agents = [config.agent(variant.agent) for variant in variants]
    return list(
        dict.fromkeys(name for agent in agents if agent is not None for name in agent.judges)
    )


def _aware(moment: datetime | None) -> datetime | None:
    """A time without a zone is UTC."""
    if moment is None or moment.tzinfo is not None:
        return moment
    return moment.replace(tzinfo=UTC)
