"""The built-in store's request records: written, read back, and removed after their
retention."""

from datetime import timedelta

import pytest
from django.db import transaction
from django.utils import timezone

from core.requestlog import RequestLog
from inference.ledger import requests
from inference.ledger.requests import RequestFilter, record_requests, request_row
from inference.models import RequestRecord

pytestmark = pytest.mark.django_db


def _row(request_id: str, days_ago: float, **fields: object) -> RequestRecord:
    log = RequestLog(request_id, "POST", "/v1/chat/completions", status=200, **fields)
    return request_row(log, [], timezone.now() - timedelta(days=days_ago))


def test_records_past_their_retention_are_removed_as_new_ones_are_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(requests, "_last_purge", float("-inf"))
    with transaction.atomic():
        record_requests([_row("old", 8), _row("recent", 6)])

    assert sorted(RequestRecord.objects.values_list("request_id", flat=True)) == ["recent"]


def test_requests_are_found_by_request_id_or_completion_id_and_filtered() -> None:
    record_requests(
        [
            _row("r-1", 0.1, user="ana", agent="a", completion_id="chatcmpl-1"),
            _row("r-2", 0, user="ana", agent="b"),
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
