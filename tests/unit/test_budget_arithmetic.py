"""Budget arithmetic at its edges: several caps at once, a cap reached exactly, a zero cap,
and usage and reservations added together."""

from datetime import UTC, datetime, timedelta

import pytest

from inference.errors import ApiError
from inference.ledger.budgets import TokenCap, check_budgets, release, reserve
from inference.models import LedgerEntry

NOW = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)
HOUR = TokenCap(window="hour", seconds=3600, cap=1000)
DAY = TokenCap(window="day", seconds=86400, cap=150)

pytestmark = pytest.mark.django_db


def bill(tokens: int, seconds_ago: float, user: str = "u") -> None:
    LedgerEntry.objects.create(
        user_id=user,
        agent="a",
        provider="openai",
        completion_id="c",
        prompt_tokens=tokens,
        completion_tokens=0,
        total_tokens=tokens,
        created_at=NOW - timedelta(seconds=seconds_ago),
    )


def refusal(*caps: TokenCap, user: str = "u") -> ApiError:
    with pytest.raises(ApiError) as raised:
        check_budgets(user, caps, NOW)
    return raised.value


def test_the_tightest_of_several_caps_refuses_and_is_named() -> None:
    bill(100, 7200)  # outside the hour, inside the day
    bill(50, 60)

    refused = refusal(HOUR, DAY)

    assert refused.param == "metadata.tokens_per_day"
    assert "150 tokens used in the last day" in refused.message
    assert refused.headers == {"Retry-After": str(86400 - 7200)}  # when the 100 leave


def test_a_cap_reached_exactly_refuses_and_one_token_under_admits() -> None:
    bill(149, 60)
    check_budgets("u", (DAY,), NOW)
    bill(1, 30)
    assert refusal(DAY).status == 429


def test_a_zero_cap_refuses_at_once_for_the_whole_window() -> None:
    refused = refusal(TokenCap(window="hour", seconds=3600, cap=0))
    assert refused.headers == {"Retry-After": "3600"}


def test_usage_and_reservations_add_up_against_the_cap() -> None:
    bill(100, 60)
    bill(1000, 60, user="someone else")
    held = reserve("u", (DAY,), 50, NOW)  # 100 used + 0 reserved < 150: admitted
    assert held is not None

    refused = refusal(DAY)  # 100 used + 50 reserved reach 150

    assert "100 tokens used in the last day and 50 reserved" in refused.message
    assert refused.headers == {"Retry-After": "1"}
    release(held)
    check_budgets("u", (DAY,), NOW)
