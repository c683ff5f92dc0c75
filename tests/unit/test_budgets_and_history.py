"""Ledger windows, reservations, Retry-After arithmetic and history trimming, against a
real database."""

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from datetime import UTC, datetime, timedelta

import pytest
from django.db import connection, transaction
from django.test.utils import CaptureQueriesContext

from agents.loader import load_config_data
from agents.schema import HistoryConfig
from inference.dialects.chat.body import ChatCompletionIn
from inference.dialects.chat.reader import from_chat_completion
from inference.ledger.history import (
    HISTORY_CACHE,
    CachedConversation,
    HistoryCache,
    load_history,
    store_history,
)
from inference.models import BudgetReservation, LedgerEntry, StoredMessage
from inference.money.admission import RESERVATION_TTL, admit, estimated_usage, release
from inference.money.budgets import check_budgets, retry_after, usage_in_windows
from inference.money.caller import Caller
from inference.money.caps import TokenCap
from inference.neutral.errors import ApiError
from inference.neutral.types import Message, Usage
from inference.turn.options import parse_options
from inference.turn.preparation import _before_the_call

NOW = datetime(2026, 11, 21, 12, 0, 0, tzinfo=UTC)
HOUR = TokenCap(window="hour", seconds=3600, cap=100)

pytestmark = pytest.mark.django_db


@pytest.fixture(autouse=True)
def empty_history_cache() -> Iterator[None]:
    """Each test's rows are rolled back, and their ids used again by the next test: a
    conversation cached by one test must not answer for another's."""
    HISTORY_CACHE.clear()
    yield
    HISTORY_CACHE.clear()


def bill(user: str, tokens: int, seconds_ago: float) -> None:
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


def test_windows_sum_only_their_own_span() -> None:
    bill("u", 10, 60)
    bill("u", 20, 7200)
    bill("u", 40, 5 * 86400)
    bill("u", 80, 31 * 86400)
    bill("other", 1000, 60)
    windows = {"hour": 3600, "day": 86400, "month": 30 * 86400}
    assert usage_in_windows("u", windows, NOW) == {
        "hour": (10, 0),
        "day": (30, 0),
        "month": (70, 0),
    }


def test_retry_after_waits_for_enough_usage_to_age_out() -> None:
    bill("u", 60, 3000)  # leaves the hour window in 600 s
    bill("u", 50, 1000)  # leaves in 2600 s
    # 110 used against 100: once the first entry leaves, 50 < 100.
    assert retry_after("u", HOUR, 110, NOW) == 600


def test_retry_after_may_need_several_entries_to_leave() -> None:
    bill("u", 30, 3500)  # leaves in 100 s
    bill("u", 30, 3000)  # leaves in 600 s
    bill("u", 90, 10)
    # 150 used: after 100 s 120 remain (still >= 100), after 600 s 90 remain.
    assert retry_after("u", HOUR, 150, NOW) == 600


def test_retry_after_rounds_up_to_whole_seconds() -> None:
    bill("u", 100, 3599.25)
    assert retry_after("u", HOUR, 100, NOW) == 1


def test_check_budgets_raises_429_naming_window_usage_and_cap() -> None:
    bill("u", 100, 1800)
    with pytest.raises(ApiError) as raised:
        check_budgets("u", (HOUR,), NOW)
    assert raised.value.status == 429
    assert raised.value.headers == {"Retry-After": "1800"}
    assert "100 tokens used in the last hour" in raised.value.message
    assert "cap of 100" in raised.value.message


def test_check_budgets_passes_under_the_cap() -> None:
    bill("u", 99, 10)
    check_budgets("u", (HOUR,), NOW)


def store(user: str, model: str, *turns: tuple[str, str]) -> None:
    StoredMessage.objects.bulk_create(
        StoredMessage(user_id=user, model=model, role=role, content=content)
        for role, content in turns
    )


def test_history_keeps_the_newest_messages_oldest_first() -> None:
    store("u", "m", ("user", "q1"), ("assistant", "a1"), ("user", "q2"), ("assistant", "a2"))
    history = load_history("u", "m", HistoryConfig(max_messages=2, max_tokens=1000))
    assert [(m.role, m.content) for m in history] == [("user", "q2"), ("assistant", "a2")]


def test_history_respects_the_token_limit_and_starts_with_a_user_turn() -> None:
    store("u", "m", ("user", "x" * 400), ("assistant", "y" * 40), ("user", "q"), ("assistant", "a"))
    history = load_history("u", "m", HistoryConfig(max_messages=50, max_tokens=20))
    # The 40-character reply fits (10 tokens) but may not open the replay.
    assert [(m.role, m.content) for m in history] == [("user", "q"), ("assistant", "a")]


def test_history_is_isolated_per_user_and_model() -> None:
    store("u", "m", ("user", "mine"), ("assistant", "ok"))
    store("v", "m", ("user", "theirs"), ("assistant", "ok"))
    store("u", "n", ("user", "other model"), ("assistant", "ok"))
    history = load_history("u", "m", HistoryConfig())
    assert [m.content for m in history] == ["mine", "ok"]


type Commits = Callable[..., AbstractContextManager[list[Callable[[], None]]]]


def written_by_this_process(
    commits: Commits, user: str, model: str, *turns: tuple[str, str]
) -> None:
    """``turns`` written as the turn recorder writes them, committed."""
    with commits(execute=True), transaction.atomic():
        store_history(
            [
                StoredMessage(user_id=user, model=model, role=role, content=content)
                for role, content in turns
            ]
        )


def replayed(user: str = "u", limits: HistoryConfig | None = None) -> tuple[list[str], list[str]]:
    """The replayed contents, and the statements reading them: "newest" (the newest rows)
    or "check" (the cached rows' count and newest id, with any newer rows)."""
    with CaptureQueriesContext(connection) as queries:
        history = load_history(user, "m", limits or HistoryConfig())
    statements = [
        "check" if "UNION ALL" in query["sql"] else "newest" if " DESC" in query["sql"] else "?"
        for query in queries.captured_queries
    ]
    return [message.content for message in history], statements


def test_a_conversation_this_process_wrote_is_replayed_from_its_cache(
    django_capture_on_commit_callbacks: Commits,
) -> None:
    written_by_this_process(
        django_capture_on_commit_callbacks, "u", "m", ("user", "q1"), ("assistant", "a1")
    )
    assert replayed() == (["q1", "a1"], ["newest"])
    written_by_this_process(
        django_capture_on_commit_callbacks, "u", "m", ("user", "q2"), ("assistant", "a2")
    )
    assert replayed() == (["q1", "a1", "q2", "a2"], ["check"])


def test_a_turn_written_elsewhere_is_read_again(
    django_capture_on_commit_callbacks: Commits,
) -> None:
    written_by_this_process(
        django_capture_on_commit_callbacks, "u", "m", ("user", "q1"), ("assistant", "a1")
    )
    assert replayed() == (["q1", "a1"], ["newest"])
    store("u", "m", ("user", "from another process"), ("assistant", "a2"))  # not through the cache
    written_by_this_process(
        django_capture_on_commit_callbacks, "u", "m", ("user", "q3"), ("assistant", "a3")
    )
    contents, _ = replayed()
    assert contents == ["q1", "a1", "from another process", "a2", "q3", "a3"]


def test_turns_another_process_appended_are_read_alone_and_kept_within_max_messages() -> None:
    limits = HistoryConfig(max_messages=4)
    store("u", "m", ("user", "q1"), ("assistant", "a1"), ("user", "q2"), ("assistant", "a2"))
    assert replayed(limits=limits) == (["q1", "a1", "q2", "a2"], ["newest"])
    store("u", "m", ("user", "q3"), ("assistant", "a3"))  # through another worker

    assert replayed(limits=limits) == (["q2", "a2", "q3", "a3"], ["check"])
    assert replayed(limits=limits) == (["q2", "a2", "q3", "a3"], ["check"])


def test_a_deletion_beside_appended_turns_reads_the_newest_rows_again() -> None:
    store("u", "m", ("user", "q1"), ("assistant", "a1"), ("user", "q2"), ("assistant", "a2"))
    assert replayed()[0] == ["q1", "a1", "q2", "a2"]
    StoredMessage.objects.filter(content="q1").delete()
    store("u", "m", ("user", "q3"), ("assistant", "a3"))

    assert replayed() == (["q2", "a2", "q3", "a3"], ["check", "newest"])


def test_a_turn_committed_late_under_an_older_id_reads_the_newest_rows_again() -> None:
    """PostgreSQL hands out ids as transactions start: a turn may commit after a newer one."""
    for pk, content in ((10, "q1"), (20, "a1")):
        StoredMessage.objects.create(pk=pk, user_id="u", model="m", role="user", content=content)
    assert replayed()[0] == ["q1", "a1"]
    for pk, content in ((15, "late"), (30, "q2")):
        StoredMessage.objects.create(pk=pk, user_id="u", model="m", role="user", content=content)

    assert replayed() == (["q1", "late", "a1", "q2"], ["check", "newest"])


def test_a_row_older_than_the_newest_max_messages_changes_nothing_and_is_not_read() -> None:
    """Only the rows from the oldest cached one up are counted: a late commit (or a
    deletion) below them leaves the newest ``max_messages`` as they were."""
    limits = HistoryConfig(max_messages=2)
    for pk, content in ((10, "q1"), (20, "a1"), (30, "q2"), (40, "a2")):
        StoredMessage.objects.create(pk=pk, user_id="u", model="m", role="user", content=content)
    assert replayed(limits=limits) == (["q2", "a2"], ["newest"])
    StoredMessage.objects.create(pk=15, user_id="u", model="m", role="user", content="late")
    StoredMessage.objects.filter(pk=10).delete()

    assert replayed(limits=limits) == (["q2", "a2"], ["check"])
    StoredMessage.objects.create(pk=35, user_id="u", model="m", role="user", content="later")
    assert replayed(limits=limits) == (["later", "a2"], ["check", "newest"])


def test_an_erased_conversation_is_not_replayed(
    django_capture_on_commit_callbacks: Commits,
) -> None:
    written_by_this_process(
        django_capture_on_commit_callbacks, "u", "m", ("user", "q1"), ("assistant", "a1")
    )
    assert replayed() == (["q1", "a1"], ["newest"])
    StoredMessage.objects.filter(user_id="u").delete()
    assert replayed() == ([], ["check", "newest"])
    assert replayed() == ([], ["check"])


def test_a_larger_max_messages_reads_the_rows_again() -> None:
    store(
        "u", "m", *[("user" if index % 2 == 0 else "assistant", f"m{index}") for index in range(8)]
    )
    assert replayed(limits=HistoryConfig(max_messages=2)) == (["m6", "m7"], ["newest"])
    assert replayed(limits=HistoryConfig(max_messages=2)) == (["m6", "m7"], ["check"])
    assert replayed(limits=HistoryConfig(max_messages=4)) == (
        ["m4", "m5", "m6", "m7"],
        ["newest"],
    )


def test_a_conversation_cached_whole_serves_a_larger_max_messages_and_keeps_growing() -> None:
    store("u", "m", ("user", "q1"), ("assistant", "a1"), ("user", "q2"))
    assert replayed(limits=HistoryConfig(max_messages=4)) == (["q1", "a1", "q2"], ["newest"])
    limits = HistoryConfig(max_messages=10)
    assert replayed(limits=limits) == (["q1", "a1", "q2"], ["check"])
    store("u", "m", ("assistant", "a2"), ("user", "q3"), ("assistant", "a3"))

    assert replayed(limits=limits) == (["q1", "a1", "q2", "a2", "q3", "a3"], ["check"])


def test_the_cache_keeps_the_most_recently_used_conversations_within_its_size() -> None:
    cache = HistoryCache(characters=1400)

    def conversation(newest: int) -> CachedConversation:  # 451 characters with overhead
        return CachedConversation(
            50, (newest - 1, newest), (Message("user", "q" * 50), Message("assistant", "a"))
        )

    for user, newest in (("a", 2), ("b", 3), ("c", 4)):
        cache.put((user, "m"), conversation(newest))
    assert cache.get(("a", "m")) == conversation(2)  # a is now the most recently used
    cache.put(("d", "m"), conversation(5))
    found = {user: cache.get((user, "m")) is not None for user in "abcd"}
    assert found == {"a": True, "b": False, "c": True, "d": True}


def reserve(tokens: int, *caps: TokenCap, when: datetime = NOW) -> int | None:
    """A first call of a request of user "u" under ``caps``, estimated at ``tokens``."""
    return admit(Caller("u", caps=caps), Usage(tokens), when, request=True)


def test_a_reservation_holds_the_budget_until_released() -> None:
    reservation = reserve(estimated_usage(5, None).total_tokens, HOUR)
    assert reservation is not None
    with pytest.raises(ApiError) as raised:
        reserve(10, HOUR)
    assert "1029 reserved by requests in progress" in raised.value.message
    assert raised.value.headers == {"Retry-After": "1"}
    release([reservation])
    assert reserve(10, HOUR) is not None


def test_a_reservation_left_by_a_crashed_process_expires() -> None:
    reserve(1000, HOUR)
    with pytest.raises(ApiError):
        reserve(10, HOUR, when=NOW + RESERVATION_TTL - timedelta(seconds=1))
    assert reserve(10, HOUR, when=NOW + RESERVATION_TTL) is not None


def test_requests_without_caps_reserve_nothing() -> None:
    assert reserve(1000) is None
    assert reserve(10, HOUR) is not None


def test_a_call_is_estimated_at_its_prompt_plus_the_reply_limit() -> None:
    assert estimated_usage(7, None).total_tokens == 7 + 1024
    assert estimated_usage(7, 50).total_tokens == 57
    assert estimated_usage(7, -3).total_tokens == 7
    assert estimated_usage(7, 10**30).total_tokens == 7 + 10**15


def test_a_finished_call_holds_what_it_spent_until_its_turn_is_billed() -> None:
    """A turn's earlier calls are counted at what they spent (not their estimate) once its
    next call is admitted, and another turn of the user sees them until the ledger row."""
    caller = Caller("u", caps=(HOUR,))
    first = admit(caller, Usage(50), NOW, request=True)
    assert first is not None
    second = admit(caller, Usage(30), NOW, request=False, finished=[(first, Usage(20))])
    assert second is not None
    held = dict(BudgetReservation.objects.values_list("id", "tokens"))
    assert held == {first: 20, second: 30}
    with pytest.raises(ApiError) as raised:  # the second spent 80: 20 + 80 reach 100
        admit(caller, Usage(1), NOW, request=False, finished=[(second, Usage(80))])
    assert "100 reserved" in raised.value.message
    # The refused admission changed nothing (its transaction rolled back).
    assert dict(BudgetReservation.objects.values_list("id", "tokens")) == held


def test_a_reservation_counts_the_preamble_and_the_replayed_history() -> None:
    """What the provider is sent, not only what the client sent: a burst of one user's
    requests is held to the budget by these estimates until the real counts come back."""
    config = load_config_data(
        {
            "providers": {"openai": {"api_key": "k"}},
            "agents": [
                {"name": "short", "provider": "openai", "model": "m", "preamble": "p" * 40},
                {"name": "long", "provider": "openai", "model": "m", "preamble": "p" * 400},
            ],
            "experiments": [
                {
                    "name": "both",
                    "strategy": "split",
                    "variants": [{"agent": "short", "weight": 1}, {"agent": "long", "weight": 1}],
                }
            ],
        }
    )
    for model in ("short", "both"):
        StoredMessage.objects.create(user_id="u", model=model, role="user", content="q" * 800)
        StoredMessage.objects.create(user_id="u", model=model, role="assistant", content="a" * 800)
    options = parse_options({"tokens_per_hour": "100000"})
    sizes = {}
    for model in ("short", "both"):
        body = ChatCompletionIn.model_validate(
            {"model": model, "max_tokens": 10, "messages": [{"role": "user", "content": "x" * 40}]}
        )
        caller = Caller("u", caps=options.caps)
        stored = _before_the_call(config, from_chat_completion(body), caller, options, NOW)
        sizes[model] = BudgetReservation.objects.get(id=stored.reservation).tokens
    # history 1600 chars (400) + the message (10) + the reply's limit (10), and the
    # preamble: the agent's own (10), or the longest of the experiment's variants (100).
    assert sizes == {"short": 430, "both": 520}


# Budget arithmetic at its edges: several caps at once, a cap reached exactly, a zero cap,
# usage and reservations added together.
WIDE_HOUR = TokenCap(window="hour", seconds=3600, cap=1000)
DAY = TokenCap(window="day", seconds=86400, cap=150)


def refusal(*caps: TokenCap) -> ApiError:
    with pytest.raises(ApiError) as raised:
        check_budgets("u", caps, NOW)
    return raised.value


def test_the_tightest_of_several_caps_refuses_and_is_named() -> None:
    bill("u", 100, 7200)  # outside the hour, inside the day
    bill("u", 50, 60)

    refused = refusal(WIDE_HOUR, DAY)

    assert refused.param == "metadata.tokens_per_day"
    assert "150 tokens used in the last day" in refused.message
    assert refused.headers == {"Retry-After": str(86400 - 7200)}  # when the 100 leave


def test_a_cap_reached_exactly_refuses_and_one_token_under_admits() -> None:
    bill("u", 149, 60)
    check_budgets("u", (DAY,), NOW)
    bill("u", 1, 30)
    assert refusal(DAY).status == 429


def test_a_zero_cap_refuses_at_once_for_the_whole_window() -> None:
    refused = refusal(TokenCap(window="hour", seconds=3600, cap=0))
    assert refused.headers == {"Retry-After": "3600"}


def test_usage_and_reservations_add_up_against_the_cap() -> None:
    bill("u", 100, 60)
    bill("someone else", 1000, 60)
    held = reserve(50, DAY)  # 100 used + 0 reserved < 150: admitted
    assert held is not None

    refused = refusal(DAY)  # 100 used + 50 reserved reach 150

    assert "100 tokens used in the last day and 50 reserved" in refused.message
    assert refused.headers == {"Retry-After": "1"}
    release([held])
    check_budgets("u", (DAY,), NOW)
