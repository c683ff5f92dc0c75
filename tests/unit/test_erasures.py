"""Which users a writer finds erased since its work began (``inference.erasures``)."""

from datetime import UTC, datetime, timedelta

import pytest
from django.db import transaction

from inference.erasures import erased_id, erasures_of, record_erasure

pytestmark = pytest.mark.django_db

START = datetime(2026, 11, 27, 12, 0, tzinfo=UTC)


def test_no_erasure_is_found_for_users_never_erased() -> None:
    assert erasures_of(["ada", "bob"]).latest == {}
    assert erasures_of([]).latest == {}


def test_the_latest_erasure_of_each_user_is_found_as_an_aware_time() -> None:
    with transaction.atomic():
        record_erasure("ada", START)
        record_erasure("ada", START + timedelta(minutes=5))
        record_erasure("cy", START + timedelta(minutes=1))

    found = erasures_of(["ada", "bob"])

    assert found.latest == {"ada": START + timedelta(minutes=5)}
    assert found.since("ada", START + timedelta(minutes=4))
    assert not found.since("ada", START + timedelta(minutes=6))
    assert not found.since("bob", START)
    assert found.kept_id("ada", START) == erased_id("ada")
    assert found.kept_id("bob", START) == "bob"
