"""The built-in store's request records: written, read back, and removed after their
retention."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from core.requestlog import RequestLog
from inference.ledger import requests
from inference.ledger.requests import RequestFilter, record_requests
from inference.models import RequestRecord
from inference.telemetry.spans import RequestTrace

pytestmark = pytest.mark.django_db


def _finished(
    request_id: str, days_ago: float, **fields: object
) -> tuple[RequestLog, RequestTrace]:
    """A request's log and its trace (one span), as if it arrived ``days_ago``."""
    log = RequestLog(request_id, "POST", "/v1/chat/completions", status=200, **fields)
    trace = RequestTrace(None, None, False, lambda _: None)
    root = trace.root("POST /v1/chat/completions")
    root.start_ns -= int(days_ago * 86400e9)
    root.end()
    return log, trace


def test_records_past_their_retention_are_removed_as_new_ones_are_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(requests, "_last_purge", float("-inf"))
    with transaction.atomic():
        record_requests([_finished("old", 8), _finished("recent", 6)])

    assert sorted(RequestRecord.objects.values_list("request_id", flat=True)) == ["recent"]
    (kept,) = RequestRecord.objects.all()
    assert kept.spans[0][0] == "POST /v1/chat/completions"


def test_requests_are_found_by_request_id_or_completion_id_and_filtered() -> None:
    record_requests(
        [
            _finished("r-1", 0.1, user="ana", agent="a", completion_id="chatcmpl-1"),
            _finished("r-2", 0, user="ana", agent="b"),
        ]
    )

    assert requests.request_by_id("r-1") is not None
    found = requests.request_by_id("chatcmpl-1")
    assert found is not None and found.request_id == "r-1"
    assert requests.request_by_id("nothing") is None
    by_agent = requests.requests_before(RequestFilter(user="ana", agent="b"), None, 10)
    assert [row.request_id for row in by_agent] == ["r-2"]
    since = requests.requests_before(
        RequestFilter(since=timezone.now() - timedelta(hours=1)), None, 10
    )
    assert [row.request_id for row in since] == ["r-2"]
