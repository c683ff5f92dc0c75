"""The request records behind the admin's Requests pages (docs/telemetry.md): written
with the writer's next group, read back as a list and as one request's span tree, and
removed after ``telemetry.retention_days``."""

import time
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any

from django.utils import timezone

from core.requestlog import RequestLog
from inference.database import insert_rows
from inference.erasures import erasures_of
from inference.models import RequestRecord as RequestRecord  # the record, for the admin
from inference.telemetry.spans import RequestTrace
from inference.telemetry.tracing import TRACING

PURGE_EVERY = 600.0  # seconds between two removals of records past their retention
_last_purge = float("-inf")


def request_row(
    log: RequestLog, spans: list[list[Any]], started: datetime, user_id: str
) -> RequestRecord:
    """The record of a finished request: its log line's fields (``user_id``: the user's,
    or the digest of one erased since) and its compact spans."""
    cost = log.cost_usd
    return RequestRecord(
        request_id=log.request_id[:64],
        created_at=started,
        path=log.path[:64],
        user_id=user_id,
        model=log.model,
        agent=log.agent,
        experiment=log.experiment,
        variant=log.variant,
        completion_id=log.completion_id,
        status=log.status,
        error=log.error[:64],
        stream=log.stream,
        latency_ms=log.latency_ms,
        input_tokens=log.prompt_tokens,
        output_tokens=log.completion_tokens,
        cost_micro_usd=None if cost is None else round(cost * 1_000_000),
        upstream=log.upstream,
        # The turn's calls as one: 1, and one more per retry or fallback (as
        # X-Gateway-Attempts counts a call's); 0 when no upstream was asked.
        attempts=1 + log.retries if log.attempts else 0,
        cache=_cache(log),
        spans=spans,
    )


def _cache(log: RequestLog) -> dict[str, Any] | None:
    """What the response cache did, for a cached agent's request: the result, and of a
    hit its age and, semantic, the cached question it matched."""
    if not log.cache:
        return None
    matched = log.matched_question or None
    return {"result": log.cache, "age_s": log.cache_age, "matched_question": matched}


def record_requests(finished: Sequence[tuple[RequestLog, RequestTrace]]) -> None:
    """Write the records of finished requests (inside the writer's transaction, on a
    database thread, where their rows are built too); every ``PURGE_EVERY`` seconds,
    remove the ones past their retention."""
    global _last_purge
    started = [datetime.fromtimestamp(trace.started_ns / 1e9, UTC) for _, trace in finished]
    erasures = erasures_of({log.user for log, _ in finished if log.user})
    insert_rows(
        [
            request_row(log, trace.compact(), at, erasures.kept_id(log.user, at))
            for (log, trace), at in zip(finished, started, strict=True)
        ]
    )
    if time.monotonic() - _last_purge >= PURGE_EVERY:
        _last_purge = time.monotonic()
        expired = timezone.now() - timedelta(days=TRACING.retention_days)
        RequestRecord.objects.filter(created_at__lt=expired).delete()


@dataclass(frozen=True)
class RequestFilter:
    user: str | None = None
    agent: str | None = None
    status: int | None = None
    since: datetime | None = None


def requests_before(where: RequestFilter, before_id: int | None, limit: int) -> list[RequestRecord]:
    """Request records, newest first, without their spans."""
    rows = RequestRecord.objects.defer("spans")
    if where.user:
        rows = rows.filter(user_id=where.user)
    if where.agent:
        rows = rows.filter(agent=where.agent)
    if where.status is not None:
        rows = rows.filter(status=where.status)
    if where.since is not None:
        rows = rows.filter(created_at__gte=where.since)
    if before_id is not None:
        rows = rows.filter(id__lt=before_id)
    return list(rows.order_by("-id")[:limit])


def request_by_id(request_id: str) -> RequestRecord | None:
    """The latest record with this X-Request-Id (a client may send the same one twice),
    or else with this completion id."""
    rows = RequestRecord.objects.order_by("-id")
    found = rows.filter(request_id=request_id).first()
    return found if found is not None else rows.filter(completion_id=request_id).first()


def requests_of_completions(completion_ids: Sequence[str]) -> dict[str, str]:
    """The X-Request-Id of each completion id that has a record."""
    rows = RequestRecord.objects.filter(completion_id__in=list(completion_ids))
    return dict(rows.values_list("completion_id", "request_id"))


def span_tree(spans: list[list[Any]]) -> list[dict[str, Any]]:
    """Compact spans as a tree: ``[{name, kind, start_ms, duration_ms, status,
    attributes, children}]`` (the roots; a request has one)."""
    nodes: list[dict[str, Any]] = []
    roots: list[dict[str, Any]] = []
    for name, kind, parent, start_us, duration_us, error, attributes in spans:
        node = {
            "name": name,
            "kind": kind,
            "start_ms": start_us / 1000,
            "duration_ms": duration_us / 1000,
            "status": "error" if error else "ok",
            "attributes": attributes,
            "children": [],
        }
        nodes.append(node)
        (nodes[parent]["children"] if 0 <= parent < len(nodes) - 1 else roots).append(node)
    return roots
