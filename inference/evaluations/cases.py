"""The cases of an evaluation: the source's recorded turns, read from the conversation
history the gateway stores (``StoredMessage``, per user and requested model name).

A case is a stored assistant reply, the user message stored just before it (the
question), and the conversation before that as the turn replayed it (the history limits
of the config). An agent with ``history: false`` stores no conversation, so it gives no
cases; nor do turns asked under an alias (their history is kept under the alias).

Synchronous ORM code, run on the database threads.
"""

from dataclasses import dataclass, replace
from datetime import datetime, timedelta

from agents.schema import HistoryConfig
from inference.evaluations.spec import Plan
from inference.ledger.history import history_before
from inference.models import LedgerEntry, RequestRecord, StoredMessage
from inference.neutral.types import Message

# A turn's ledger row is written with its history rows, stamped when the turn ended: the
# original's cost is that of the user's last turn of the source at most this long before
# its reply was stored.
LEDGER_MATCH = timedelta(seconds=10)


@dataclass(frozen=True)
class RecordedCase:
    user_id: str
    recorded_at: datetime  # when the reply was stored
    question: str
    reply: str
    history: tuple[Message, ...]  # the conversation before the question, oldest first
    cost_micro_usd: int | None  # what the recorded turn cost (None: unknown, or not found)
    # How long its request took, from its request record (None: not found, or expired).
    latency_ms: float | None = None


def recorded_cases(plan: Plan, limits: HistoryConfig) -> list[RecordedCase]:
    """The plan's source's recorded turns in its window, newest first, at most its
    ``limit``."""
    replies = StoredMessage.objects.filter(model=plan.source_name, role="assistant")
    if plan.users:
        replies = replies.filter(user_id__in=plan.users)
    if plan.since is not None:
        replies = replies.filter(created_at__gte=plan.since)
    if plan.until is not None:
        replies = replies.filter(created_at__lt=plan.until)
    cases: list[tuple[RecordedCase, str | None]] = []  # with its turn's completion id
    for reply in replies.order_by("-id").iterator(chunk_size=plan.limit):
        question = (
            StoredMessage.objects.filter(user_id=reply.user_id, model=reply.model, id__lt=reply.id)
            .order_by("-id")
            .first()
        )
        if question is None or question.role != "user":
            continue  # its question was not kept (a pair cut by a deletion)
        history = history_before(reply.user_id, reply.model, question.id, limits)
        cost, completion_id = _recorded_turn(plan, reply)
        case = RecordedCase(
            user_id=reply.user_id,
            recorded_at=reply.created_at,
            question=question.content,
            reply=reply.content,
            history=tuple(history),
            cost_micro_usd=cost,
        )
        cases.append((case, completion_id))
        if len(cases) == plan.limit:
            break
    latencies = _latencies([completion_id for _, completion_id in cases if completion_id])
    return [
        replace(case, latency_ms=latencies.get(completion_id or ""))
        for case, completion_id in cases
    ]


def _recorded_turn(plan: Plan, reply: StoredMessage) -> tuple[int | None, str | None]:
    """The cost and completion id of the turn that stored ``reply``: the ledger has no
    link from a message to its turn, so it is the user's latest turn row of the source at
    most ``LEDGER_MATCH`` before the reply was stored."""
    turns = LedgerEntry.objects.filter(
        kind="turn",
        user_id=reply.user_id,
        created_at__lte=reply.created_at,
        created_at__gte=reply.created_at - LEDGER_MATCH,
    )
    if plan.source_kind == "experiment":
        turns = turns.filter(experiment=plan.source_name)
    else:
        turns = turns.filter(agent=plan.source_name, experiment="")
    row = turns.order_by("-created_at", "-id").values_list("cost_micro_usd", "completion_id")
    return next(iter(row[:1]), (None, None))


def _latencies(completion_ids: list[str]) -> dict[str, float]:
    """The latency of each turn's request, by completion id, in one query (a record
    expired with the request log's retention is missing)."""
    records = RequestRecord.objects.filter(completion_id__in=completion_ids)
    return dict(records.values_list("completion_id", "latency_ms"))
