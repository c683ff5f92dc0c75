"""The gateway's half of a tool round, kept for the client's follow-up."""

from datetime import timedelta

import pytest
from django.utils import timezone

from inference.models import ToolExchange
from inference.neutral.types import Message, ToolCall
from inference.tools.exchanges import KEPT_FOR, delete_expired, load_exchanges, tool_exchange_rows
from inference.tools.loop import Exchange

pytestmark = pytest.mark.django_db

EXCHANGE = Exchange(
    calls=(ToolCall("own_1", "add", '{"a": 1}'),),
    results=(Message(role="tool", content="2", tool_call_id="own_1", name="add"),),
    signatures=(("client_1", "c2ln"),),
)


def keep(user: str, call_id: str, age: timedelta) -> None:
    (row,) = tool_exchange_rows(user, [call_id], EXCHANGE)
    row.save()
    ToolExchange.objects.filter(id=row.id).update(created_at=timezone.now() - age)


def test_exchanges_come_back_for_their_user_within_the_hour_only() -> None:
    keep("alice", "client_1", timedelta(minutes=59))
    keep("alice", "client_old", KEPT_FOR + timedelta(seconds=1))
    keep("bob", "client_bob", timedelta(minutes=1))
    now = timezone.now()

    found = load_exchanges("alice", ["client_1", "client_old", "client_bob"], now)

    assert found == {"client_1": EXCHANGE}
    assert load_exchanges("mallory", ["client_1"], now) == {}
    assert delete_expired(now) == 1
