"""Who work is done for: the caller every model call, tool call and task dispatch carries
(docs/cost-and-keys.md, "Who pays").

A caller is built once, where work starts (a ``/v1`` request, a trigger's run, a task
taken up, an evaluation, a smoke run), and handed down unchanged to everything the work
starts: its subagents, its tasks (stored with them), the judges and memory work after its
reply (as the same caller with another purpose). Nothing looks the user or the key up
again on the way, so a limit that holds for the request holds for every call it leads
to.
"""

from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Literal, get_args

from django.utils import timezone

from inference.money.caps import TokenCap
from inference.money.keys import KeyGrant
from inference.telemetry.spans import NO_SPAN, Span

# Why calls are made. A request's own work, billed to its caller as a turn: its turns (a
# request's, a task's, one asked over MCP) and its embeddings.
type TurnPurpose = Literal["turn", "task", "mcp", "embedding"]
# Work billed under a kind of its own (``inference.money.settlement``): batch lines, to
# the caller too; the rest to the agent that did it, against no user's or key's limit.
type OwnPurpose = Literal[
    "batch", "judge", "shadow", "memory", "cache", "guardrail", "evaluation", "smoke"
]
type Purpose = TurnPurpose | OwnPurpose
TURN_PURPOSES: tuple[TurnPurpose, ...] = get_args(TurnPurpose.__value__)
_PAID_UNDER_LIMITS: frozenset[Purpose] = frozenset({*TURN_PURPOSES, "batch"})


@dataclass(frozen=True)
class Caller:
    """``user_id``: whose work it is (history, memories, budgets); ``key``: the minted API
    key that pays, if any; ``caps``: the user's caps that apply (the request's own and the
    operator's); ``span``: where its calls are traced; ``started_at``: when the work
    began (a user erased since gets nothing written back); ``task_depth``: 0 for a
    request's own work, n for a task dispatched n levels down."""

    user_id: str
    key: KeyGrant | None = None
    caps: tuple[TokenCap, ...] = ()
    purpose: Purpose = "turn"
    span: Span = NO_SPAN
    started_at: datetime = field(default_factory=timezone.now)
    task_depth: int = 0

    @property
    def key_id(self) -> int | None:
        return self.key.id if self.key is not None else None

    @property
    def pays(self) -> bool:
        """Whether its calls count against the user's caps and the key's limits."""
        return self.purpose in _PAID_UNDER_LIMITS

    @property
    def limited(self) -> bool:
        """Whether each of its model calls is admitted against limits before it is made (a
        database transaction: callers without limits skip it)."""
        if not self.pays:
            return False
        return bool(self.caps) or (self.key is not None and self.key.limited)

    @property
    def rechecks_key(self) -> bool:
        """Whether each call asks again whether the key is still valid: background work
        outlives the request that checked it (a task or a batch whose key was revoked
        stops)."""
        return self.purpose in ("task", "batch") and self.key is not None

    def to(self, purpose: Purpose) -> "Caller":
        """The same caller, making calls for another reason (a judge of its reply)."""
        return replace(self, purpose=purpose)

    def traced(self, span: Span) -> "Caller":
        """The same caller, its calls traced under ``span`` (a subagent's conversation)."""
        return replace(self, span=span)
