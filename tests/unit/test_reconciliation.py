"""Spend reconciliation's pieces with logic, in process: the drift's arithmetic, each
billing API's requests and pages (in the shapes their references document), the lease
that lets one process fetch at a time and once a day, and the rows a fetch stores."""

from datetime import UTC, date, datetime, timedelta
from typing import Any

import pytest

from agents.schema import BillingConfig
from inference.automation.leases import lease_state, release_lease, take_lease
from inference.models import LedgerEntry, ReconciledSpend
from inference.reconciliation import drift, store
from inference.reconciliation.anthropic_costs import AnthropicCostReport
from inference.reconciliation.bills import BilledLine, BillingError
from inference.reconciliation.fetching import Fetched
from inference.reconciliation.openai_costs import OpenAICosts

DAY = date(2026, 11, 20)
NOON = datetime(2026, 11, 20, 12, tzinfo=UTC)


# ---- the numbers ------------------------------------------------------------------------


def test_drift_is_computed_less_billed_as_a_percentage_of_billed() -> None:
    # Billed 10 % below what was computed: $1 computed, $0.90 billed.
    assert drift.drift_micro(900_000, 1_000_000) == 100_000
    assert drift.drift_pct(900_000, 1_000_000) == 11.11
    assert drift.drift_pct(1_000_000, 1_000_000) == 0.0
    assert drift.drift_pct(1_000_000, 900_000) == -10.0
    assert drift.drift_pct(0, 1_000_000) is None


def test_a_drift_is_flagged_only_above_the_threshold() -> None:
    assert drift.flagged(11.11, 5) and drift.flagged(-5.01, 5)
    assert not drift.flagged(5.0, 5) and not drift.flagged(-5.0, 5)
    assert not drift.flagged(None, 5)


def test_the_last_days_include_today() -> None:
    assert drift.window(DAY, 7) == (date(2026, 11, 14), DAY)
    assert drift.window(DAY, 1) == (DAY, DAY)


# ---- OpenAI's organization Costs API ----------------------------------------------------


def openai_bucket(day: date, *results: tuple[str | None, float]) -> dict[str, Any]:
    start = int(datetime(day.year, day.month, day.day, tzinfo=UTC).timestamp())
    return {
        "object": "bucket",
        "start_time": start,
        "end_time": start + 86_400,
        "results": [
            {
                "object": "organization.costs.result",
                "amount": {"value": value, "currency": "usd"},
                "line_item": line_item,
                "project_id": None,
            }
            for line_item, value in results
        ],
    }


def test_openai_asks_for_daily_line_items_of_the_days_with_the_admin_key() -> None:
    billing = BillingConfig(admin_key="sk-admin-1", project="proj_abc")

    request = OpenAICosts().request("https://api.openai.com/v1", billing, DAY, DAY, "page_2")

    assert request.url == "https://api.openai.com/v1/organization/costs"
    assert request.headers == {"Authorization": "Bearer sk-admin-1"}
    assert dict(request.params) == {
        "start_time": str(int(datetime(2026, 11, 20, tzinfo=UTC).timestamp())),
        "end_time": str(int(datetime(2026, 11, 21, tzinfo=UTC).timestamp())),
        "bucket_width": "1d",
        "group_by": "line_item",
        "limit": "1",
        "project_ids": "proj_abc",
        "page": "page_2",
    }


def test_openai_lines_name_the_model_before_the_comma() -> None:
    body = {
        "object": "page",
        "data": [
            openai_bucket(DAY, ("gpt-4.1-mini, input", 0.012), ("gpt-4.1-mini, output", 0.0345)),
            openai_bucket(DAY + timedelta(days=1), ("web search tool calls", 0.1), (None, 0.5)),
        ],
        "has_more": True,
        "next_page": "page_AAAA",
    }

    page = OpenAICosts().read(body, BillingConfig(admin_key="k"))

    assert page.lines == [
        BilledLine(DAY, "gpt-4.1-mini", 12_000),
        BilledLine(DAY, "gpt-4.1-mini", 34_500),
        BilledLine(DAY + timedelta(days=1), "web search tool calls", 100_000),
        BilledLine(DAY + timedelta(days=1), "(no model)", 500_000),
    ]
    assert page.next_page == "page_AAAA"
    last = OpenAICosts().read(
        {**body, "has_more": False, "next_page": None}, BillingConfig(admin_key="k")
    )
    assert last.next_page is None


@pytest.mark.parametrize(
    "body",
    [
        {},
        {"data": [{"start_time": 0, "results": [{"amount": {"currency": "usd"}}]}]},
        {"data": [openai_bucket(DAY, ("m", "x"))]},
    ],
)
def test_openai_page_that_is_not_one_is_a_billing_error(body: dict[str, Any]) -> None:
    with pytest.raises(BillingError, match="something other than a page of costs"):
        OpenAICosts().read(body, BillingConfig(admin_key="k"))


# ---- Anthropic's cost report ------------------------------------------------------------


def anthropic_result(
    amount: str, model: str | None, workspace: str | None = None
) -> dict[str, Any]:
    return {
        "amount": amount,
        "currency": "USD",
        "cost_type": "tokens" if model else "web_search",
        "description": f"{model} Usage - Input Tokens" if model else "Web Search Usage",
        "model": model,
        "service_tier": "standard" if model else None,
        "token_type": "uncached_input_tokens" if model else None,
        "context_window": "0-200k" if model else None,
        "workspace_id": workspace,
    }


def test_anthropic_asks_by_description_and_by_workspace_for_a_project() -> None:
    whole = AnthropicCostReport().request(
        "https://api.anthropic.com", BillingConfig(admin_key="sk-ant-admin01-x"), DAY, DAY, None
    )
    one = AnthropicCostReport().request(
        "https://api.anthropic.com",
        BillingConfig(admin_key="sk-ant-admin01-x", project="wrkspc_1"),
        DAY - timedelta(days=6),
        DAY,
        "page_x",
    )

    assert whole.url == "https://api.anthropic.com/v1/organizations/cost_report"
    assert whole.headers == {"x-api-key": "sk-ant-admin01-x", "anthropic-version": "2023-06-01"}
    assert list(whole.params) == [
        ("starting_at", "2026-11-20T00:00:00Z"),
        ("ending_at", "2026-11-21T00:00:00Z"),
        ("bucket_width", "1d"),
        ("group_by[]", "description"),
        ("limit", "1"),
    ]
    assert ("group_by[]", "workspace_id") in one.params
    assert ("limit", "7") in one.params and ("page", "page_x") in one.params


def test_anthropic_cents_become_usd_and_a_project_keeps_its_workspace_only() -> None:
    body = {
        "data": [
            {
                "starting_at": "2026-11-20T00:00:00Z",
                "ending_at": "2026-11-21T00:00:00Z",
                "results": [
                    anthropic_result("123.45", "claude-haiku-4-5", "wrkspc_1"),
                    anthropic_result("0.0375", "claude-haiku-4-5", "wrkspc_1"),
                    anthropic_result("99", "claude-haiku-4-5", None),
                    anthropic_result("1000", None, "wrkspc_1"),
                ],
            }
        ],
        "has_more": False,
        "next_page": None,
    }

    whole = AnthropicCostReport().read(body, BillingConfig(admin_key="k"))
    one = AnthropicCostReport().read(body, BillingConfig(admin_key="k", project="wrkspc_1"))

    assert [line.micro_usd for line in whole.lines] == [1_234_500, 375, 990_000, 10_000_000]
    assert [(line.model, line.micro_usd) for line in one.lines] == [
        ("claude-haiku-4-5", 1_234_500),
        ("claude-haiku-4-5", 375),
        ("Web Search Usage", 10_000_000),
    ]
    assert whole.next_page is None


def test_anthropic_amount_in_another_currency_is_a_billing_error() -> None:
    result = {**anthropic_result("1", "claude"), "currency": "EUR"}
    body = {"data": [{"starting_at": "2026-11-20T00:00:00Z", "results": [result]}]}
    with pytest.raises(BillingError, match="EUR, not USD"):
        AnthropicCostReport().read(body, BillingConfig(admin_key="k"))


# ---- the lease --------------------------------------------------------------------------


@pytest.mark.django_db
def test_one_holder_at_a_time_until_it_releases_or_its_lease_runs_out() -> None:
    assert take_lease("work", "a", NOON, 60)
    assert not take_lease("work", "b", NOON + timedelta(seconds=30), 60)
    assert lease_state("work", NOON + timedelta(seconds=30)) == (True, None)
    assert take_lease("work", "b", NOON + timedelta(seconds=61), 60)  # a's ran out
    release_lease("work", "a", NOON + timedelta(seconds=62))  # a no longer holds it
    assert not take_lease("work", "c", NOON + timedelta(seconds=63), 60)
    release_lease("work", "b", NOON + timedelta(seconds=64))
    assert take_lease("work", "c", NOON + timedelta(seconds=65), 60)


@pytest.mark.django_db
def test_work_done_once_a_day_is_not_taken_again_that_day() -> None:
    assert take_lease("daily", "a", NOON, 60, once_on=DAY)
    release_lease("daily", "a", NOON + timedelta(seconds=1), done_on=DAY)

    later = NOON + timedelta(hours=1)
    assert not take_lease("daily", "b", later, 60, once_on=DAY)
    assert lease_state("daily", later) == (False, DAY)
    assert take_lease("daily", "b", later, 60)  # work not once a day still may
    release_lease("daily", "b", later + timedelta(seconds=1))
    assert take_lease("daily", "c", later + timedelta(days=1), 60, once_on=DAY + timedelta(days=1))


@pytest.mark.django_db
def test_a_failed_fetch_leaves_a_provider_s_rows_and_an_answer_replaces_them() -> None:
    for provider, model, micro in (
        ("openai", "gpt-a", 900),
        ("openai", "gpt-b", 50),
        ("anthropic", "claude", 70),
    ):
        LedgerEntry.objects.create(
            user_id="u", agent="a", provider=provider, model=model, completion_id="c",
            prompt_tokens=1, completion_tokens=1, total_tokens=2, cost_micro_usd=micro,
            kind="judge", created_at=NOON,
        )  # fmt: skip
    first = DAY - timedelta(days=1)
    store.record(
        [
            Fetched("openai", [BilledLine(DAY, "gpt-a", 1000), BilledLine(DAY, "gpt-a", 10)]),
            Fetched("anthropic", [BilledLine(DAY, "claude", 70), BilledLine(first, "other", 5)]),
        ],
        first,
        DAY,
        NOON,
    )
    store.record(
        [Fetched("openai", [BilledLine(DAY, "gpt-b", 60)]), Fetched("anthropic", None, "401")],
        first,
        DAY,
        NOON,
    )

    rows = ReconciledSpend.objects.order_by("provider", "day", "model")
    assert [
        (r.provider, r.day, r.model, r.billed_micro_usd, r.computed_micro_usd) for r in rows
    ] == [
        ("anthropic", first, "other", 5, 0),
        ("anthropic", DAY, "claude", 70, 70),
        ("openai", DAY, "gpt-a", 0, 900),
        ("openai", DAY, "gpt-b", 60, 50),
    ]
