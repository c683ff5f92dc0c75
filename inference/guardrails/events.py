"""What guardrails did, kept: an event per guardrail that redacted, blocked or warned
(checks that pass keep nothing), counted in ``/metrics`` and listed in the admin at
``/admin/guardrails/events``. An event names entities and counts, never the text. Events
are written within a second, many in one statement."""

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from django.utils import timezone

from core.metrics import GUARDRAIL_EVENTS
from inference.models import GuardrailEvent as GuardrailEvent  # the record, for the admin

Outcome = Literal["passed", "redacted", "blocked", "warned"]
Stage = Literal["input", "output", "tool_results"]
# Which outcome a guardrail that acted several times in a turn is reported with.
_RANK: dict[str, int] = {"passed": 0, "warned": 1, "redacted": 2, "blocked": 3}


@dataclass(frozen=True)
class Acted:
    guardrail: str
    stage: Stage
    action: Outcome
    detail: dict[str, Any]


@dataclass(frozen=True)
class Whose:
    """Whose request the events are of."""

    user_id: str
    key_id: int | None
    agent: str


@dataclass
class GuardrailOutcomes:
    """Every guardrail that ran in a turn and how it ended: the response's
    ``X-Gateway-Guardrails``."""

    outcomes: dict[str, Outcome] = field(default_factory=dict)

    def note(self, guardrail: str, outcome: Outcome) -> None:
        known = self.outcomes.get(guardrail, "passed")
        if guardrail not in self.outcomes or _RANK[outcome] > _RANK[known]:
            self.outcomes[guardrail] = outcome

    @property
    def header(self) -> str:
        return ", ".join(f"{name}={outcome}" for name, outcome in self.outcomes.items())


class Deferring(Protocol):
    """The engine's record writer (``inference.ledger.writer``): events are gathered and
    written together, off the request's path (nothing reads them soon)."""

    def defer(self, write_group: Callable[[list[Any]], None], record: Any) -> None: ...


@dataclass(frozen=True)
class _Kept:
    whose: Whose
    acted: tuple[Acted, ...]
    at: datetime


def keep(writer: Deferring, whose: Whose, acted: Sequence[Acted]) -> None:
    if not acted:
        return
    for event in acted:
        GUARDRAIL_EVENTS.labels(event.guardrail, event.action).inc()
    writer.defer(_written, _Kept(whose, tuple(acted), timezone.now()))


def _written(kept: list[_Kept]) -> None:
    GuardrailEvent.objects.bulk_create(
        GuardrailEvent(
            created_at=group.at,
            user_id=group.whose.user_id,
            api_key_id=group.whose.key_id,
            agent=group.whose.agent,
            guardrail=event.guardrail,
            stage=event.stage,
            action=event.action,
            detail=event.detail,
        )
        for group in kept
        for event in group.acted
    )


def events_before(
    user: str | None, agent: str | None, guardrail: str | None, before: int | None, limit: int
) -> list[GuardrailEvent]:
    """Events newest first, filtered, with ids below ``before``."""
    rows = GuardrailEvent.objects.order_by("-id")
    if user:
        rows = rows.filter(user_id=user)
    if agent:
        rows = rows.filter(agent=agent)
    if guardrail:
        rows = rows.filter(guardrail=guardrail)
    if before is not None:
        rows = rows.filter(id__lt=before)
    return list(rows[:limit])
