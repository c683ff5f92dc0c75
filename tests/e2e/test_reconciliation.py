"""Spend reconciliation (docs/reconciliation.md) through a real gateway (``serve --workers
2``): priced calls put a known spend in the ledger; the OpenAI and Anthropic fakes bill
it through their billing APIs (the organization Costs API, the Admin API's cost report,
in the shapes their references document) equal, 10 % lower and zero; the admin's rows,
flag and page, ``/metrics``, the ``reconcile`` command, one fetch at a time and the
day's fetch once across processes."""

import json
import re
import threading
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from decimal import Decimal
from typing import Any

import httpx
import openai
import pytest
from genai_prices import Usage as PricedUsage
from genai_prices import calc_price
from playwright.sync_api import Page, expect

from tests.browser import chromium_page, shot
from tests.e2e.test_management_commands import manage
from tests.fakes.anthropic_upstream import COST_REPORT_PATH, AnthropicUpstream
from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.fakes.billing import Cost
from tests.fakes.openai_upstream import COSTS_PATH, OpenAIUpstream
from tests.polling import wait_for
from tests.server import GatewayServer
from tests.upstreams import api_key_of, fake_base_url

JSON = {"Accept": "application/json"}
OPENAI_ADMIN = "sk-admin-openai-0123456789abcdef"
ANTHROPIC_ADMIN = "sk-ant-admin01-0123456789wxyz"
# agent: (provider, model, its price table's provider)
AGENTS = {
    "mini": ("openai", "gpt-4.1-mini", "openai"),
    "nano": ("openai", "gpt-4.1-nano", "openai"),
    "four": ("openai", "gpt-4o-mini", "openai"),
    "haiku": ("anthropic", "claude-haiku-4-5", "anthropic"),
}
PROMPT, COMPLETION = 100_000, 10_000  # tokens of every priced call


def events(server: GatewayServer, name: str) -> list[dict[str, Any]]:
    """The log's lines of the event ``name``."""
    lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
    return [line for line in lines if line.get("event") == name]


def daily_fetches(server: GatewayServer) -> list[dict[str, Any]]:
    return [line for line in events(server, "reconciliation_fetched") if line["by"] == "daily"]


def costs_of(fakes: dict[str, FakeUpstream], kind: str) -> list[Cost]:
    """What the fake of ``kind`` bills (a test adds to it; each test starts with none)."""
    fake = fakes[kind]
    assert isinstance(fake, OpenAIUpstream | AnthropicUpstream)
    return fake.costs


def config(upstreams: dict[str, FakeUpstream]) -> str:
    lines = ["providers:"]
    for kind, admin_key in (("openai", OPENAI_ADMIN), ("anthropic", ANTHROPIC_ADMIN)):
        url = fake_base_url(upstreams[kind])
        lines.append(
            f"  {kind}: {{api_key: {api_key_of(kind)}, base_url: '{url}', "
            f"retries: {{attempts: 0}}, billing: {{admin_key: {admin_key}}}}}"
        )
    lines += [
        "agents:",
        *(
            f"  - {{name: {name}, provider: {kind}, model: {model}, history: false}}"
            for name, (kind, model, _) in AGENTS.items()
        ),
        "reconciliation: {days: 7, alert_pct: 5}",
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    workdir = tmp_path_factory.mktemp("reconciliation")
    gateway = GatewayServer(workdir, config(upstreams), workers=2).start()
    # The day's fetch, at start (nothing spent yet): the tests' fetches come after it. Both
    # workers look whether it is done; the one that does not fetch says so.
    wait_for(
        lambda: (
            daily_fetches(gateway)
            and events(gateway, "reconciliation_daily_done_elsewhere")
            + events(gateway, "reconciliation_daily_under_way_elsewhere")
        ),
        "both workers' look at the day's fetch",
    )
    yield gateway
    gateway.stop()


@pytest.fixture(scope="module")
def spent(server: GatewayServer, upstreams: dict[str, FakeUpstream]) -> dict[str, Decimal]:
    """One priced call of each agent: what each model cost, from genai-prices' own table."""
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)
    known = {}
    for name, (kind, model, table) in AGENTS.items():
        upstreams[kind].reset()
        upstreams[kind].script(
            Reply.of_text("Priced.", prompt_tokens=PROMPT, completion_tokens=COMPLETION)
        )
        reply = client.chat.completions.create(
            model=name, messages=[{"role": "user", "content": "Hi"}], safety_identifier="payer"
        )
        usage = PricedUsage(input_tokens=PROMPT, output_tokens=COMPLETION)
        known[model] = calc_price(usage, model, provider_id=table).total_price
        assert reply.usage.model_extra["cost"] == pytest.approx(float(known[model]))

    def recorded() -> bool:
        rows = httpx.get(f"{server.url}/admin/spend?group_by=model", headers=JSON).json()["data"]
        return {row["group"] for row in rows if row["cost_usd"] > 0} >= set(known)

    wait_for(recorded, "the ledger rows of the calls")
    return known


def bill(fakes: dict[str, FakeUpstream], spent: dict[str, Decimal], **ratios: float) -> None:
    """Each fake bills today what its models cost times ``ratios[agent]`` (1 if not
    given), as an input and an output line."""
    today = datetime.now(UTC).date()
    for name, (kind, model, _) in AGENTS.items():
        usd = (spent[model] * Decimal(str(ratios.get(name, 1)))).quantize(Decimal("0.000001"))
        input_usd = (usd * Decimal("0.7")).quantize(Decimal("0.000001"))
        costs_of(fakes, kind).extend(
            [Cost(today, model, input_usd), Cost(today, model, usd - input_usd, "output")]
        )


def run(server: GatewayServer) -> httpx.Response:
    return httpx.post(f"{server.url}/admin/reconciliation/run", json={}, timeout=30)


def rows_of(body: dict[str, Any]) -> dict[tuple[str, str], dict[str, Any]]:
    today = datetime.now(UTC).date().isoformat()
    return {(row["provider"], row["model"]): row for row in body["data"] if row["day"] == today}


def billing_calls(fake: FakeUpstream, path: str) -> list[Recorded]:
    return [recorded for recorded in fake.requests if recorded.path == path]


def test_billed_equal_lower_and_zero_are_set_beside_the_computed_spend(
    server: GatewayServer, fakes: dict[str, FakeUpstream], spent: dict[str, Decimal]
) -> None:
    bill(fakes, spent, nano=0.9, four=0)
    other = Cost(datetime.now(UTC).date(), "gpt-5", Decimal("0.5"))  # other software's
    costs_of(fakes, "openai").append(other)

    answered = run(server)

    assert answered.status_code == 200, answered.text
    assert answered.json()["errors"] == []
    rows = rows_of(answered.json())
    assert set(rows) == {
        ("openai", "gpt-4.1-mini"),
        ("openai", "gpt-4.1-nano"),
        ("openai", "gpt-4o-mini"),
        ("openai", "gpt-5"),
        ("anthropic", "claude-haiku-4-5"),
    }
    for (_, model), row in rows.items():
        computed = float(spent.get(model, 0))
        assert row["computed_usd"] == pytest.approx(computed, abs=1e-6)
        assert row["drift_usd"] == pytest.approx(row["computed_usd"] - row["billed_usd"], abs=1e-9)
    mini, nano = rows["openai", "gpt-4.1-mini"], rows["openai", "gpt-4.1-nano"]
    assert (mini["billed_usd"], mini["drift_usd"], mini["drift_pct"], mini["flagged"]) == (
        pytest.approx(float(spent["gpt-4.1-mini"])),
        0.0,
        0.0,
        False,
    )
    # Billed 10 % below what was computed: the gateway computed 11.11 % more.
    assert nano["billed_usd"] == pytest.approx(float(spent["gpt-4.1-nano"]) * 0.9)
    assert (nano["drift_pct"], nano["flagged"]) == (11.11, True)
    zero = rows["openai", "gpt-4o-mini"]
    assert (zero["billed_usd"], zero["drift_pct"], zero["flagged"]) == (0.0, None, False)
    assert zero["drift_usd"] == pytest.approx(float(spent["gpt-4o-mini"]))
    unknown = rows["openai", "gpt-5"]
    assert (unknown["billed_usd"], unknown["computed_usd"]) == (0.5, 0.0)
    assert (unknown["drift_pct"], unknown["flagged"]) == (-100.0, True)
    haiku = rows["anthropic", "claude-haiku-4-5"]
    assert (haiku["billed_usd"], haiku["drift_pct"]) == (pytest.approx(0.15), 0.0)
    # GET answers what the run stored.
    read = httpx.get(f"{server.url}/admin/reconciliation", headers=JSON, timeout=10)
    assert read.json() == answered.json()


def test_the_admin_key_goes_as_each_provider_expects_for_the_last_days(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    assert run(server).status_code == 200

    today = datetime.now(UTC).date()
    first = datetime.combine(today - timedelta(days=6), datetime.min.time(), UTC)
    (costs,) = billing_calls(fakes["openai"], COSTS_PATH)
    assert costs.method == "GET"
    assert costs.headers["authorization"] == f"Bearer {OPENAI_ADMIN}"
    assert costs.query["start_time"] == [str(int(first.timestamp()))]
    assert (costs.query["bucket_width"], costs.query["group_by"]) == (["1d"], ["line_item"])
    assert "project_ids" not in costs.query
    (report,) = billing_calls(fakes["anthropic"], COST_REPORT_PATH)
    assert report.headers["x-api-key"] == ANTHROPIC_ADMIN
    assert report.headers["anthropic-version"] == "2023-06-01"
    assert "authorization" not in report.headers
    assert report.query["starting_at"] == [first.strftime("%Y-%m-%dT%H:%M:%SZ")]
    assert report.query["group_by[]"] == ["description"]


def test_a_401_from_one_provider_is_shown_and_the_other_s_rows_still_come(
    server: GatewayServer, fakes: dict[str, FakeUpstream], spent: dict[str, Decimal]
) -> None:
    assert run(server).status_code == 200  # nothing billed today: openai rows all 0 billed
    bill(fakes, spent)
    # The key was revoked, say: Anthropic refuses it (and this proxy of it quotes it).
    refusal = Reply.of_error(401, f"invalid x-api-key {ANTHROPIC_ADMIN}")
    fakes["anthropic"].answer_when(lambda recorded: recorded.path == COST_REPORT_PATH, refusal)

    answered = run(server)

    assert answered.status_code == 200
    (error,) = answered.json()["errors"]
    assert error["provider"] == "anthropic"
    assert "answered 401: invalid x-api-key" in error["error"]
    assert ANTHROPIC_ADMIN not in error["error"] and "sk-…wxyz" in error["error"]
    rows = rows_of(answered.json())
    assert rows["openai", "gpt-4.1-mini"]["drift_pct"] == 0.0
    # Anthropic's rows are those of its last answer, which billed nothing today.
    assert rows["anthropic", "claude-haiku-4-5"]["billed_usd"] == 0.0
    page = httpx.get(f"{server.url}/admin/reconciliation", timeout=10).text
    assert "answered 401: invalid x-api-key" in page
    assert ANTHROPIC_ADMIN not in page


def test_the_admin_keys_are_never_shown_by_the_admin(server: GatewayServer) -> None:
    reads = [
        httpx.get(f"{server.url}/admin/providers", headers=JSON).text,
        httpx.get(f"{server.url}/admin/providers/openai", headers=JSON).text,
        httpx.get(f"{server.url}/admin/providers/openai/edit").text,
        httpx.get(f"{server.url}/admin/config").text,
        httpx.get(f"{server.url}/admin/config", headers=JSON).text,
        httpx.get(f"{server.url}/admin/reconciliation").text,
        httpx.get(f"{server.url}/admin/revisions", headers=JSON).text,
    ]
    for text in reads:
        assert OPENAI_ADMIN not in text and ANTHROPIC_ADMIN not in text
    provider = httpx.get(f"{server.url}/admin/providers/anthropic", headers=JSON).json()
    assert provider["billing"] == {"admin_key": "sk-…wxyz"}
    assert OPENAI_ADMIN not in server.log() and ANTHROPIC_ADMIN not in server.log()


def test_a_project_set_through_the_admin_keeps_the_masked_key_and_narrows_the_bill(
    server: GatewayServer, fakes: dict[str, FakeUpstream], spent: dict[str, Decimal]
) -> None:
    today = datetime.now(UTC).date()
    mini = spent["gpt-4.1-mini"]
    costs_of(fakes, "openai").extend(
        [Cost(today, "gpt-4.1-mini", mini, project="proj_gw"), Cost(today, "gpt-4.1-mini", mini)]
    )
    shown = httpx.get(f"{server.url}/admin/providers/openai", headers=JSON).json()
    assert shown["billing"] == {"admin_key": "sk-…cdef"}

    def narrowed(project: str | None) -> bool:
        """Written with ``project``, then fetched by a worker that applied it."""
        billing = {**shown["billing"], **({"project": project} if project else {})}
        written = httpx.put(
            f"{server.url}/admin/providers/openai", json={**shown, "billing": billing}
        )
        assert written.status_code == 200, written.text
        assert run(server).status_code == 200
        calls = billing_calls(fakes["openai"], COSTS_PATH)
        return bool(calls) and calls[-1].query.get("project_ids") == (
            [project] if project else None
        )

    try:
        wait_for(lambda: narrowed("proj_gw"), "a fetch of the project's costs only")
        assert f"admin_key: {OPENAI_ADMIN}" in server.config_path.read_text()
        assert billing_calls(fakes["openai"], COSTS_PATH)[-1].headers["authorization"] == (
            f"Bearer {OPENAI_ADMIN}"
        )
        rows = rows_of(httpx.get(f"{server.url}/admin/reconciliation", headers=JSON).json())
        assert rows["openai", "gpt-4.1-mini"]["drift_pct"] == 0.0  # the other project's left out
    finally:
        wait_for(lambda: narrowed(None), "a fetch of the whole organization again")


def test_drift_is_flagged_on_the_overview_and_in_metrics(
    server: GatewayServer, fakes: dict[str, FakeUpstream], spent: dict[str, Decimal]
) -> None:
    bill(fakes, spent, nano=0.9, four=0)
    assert run(server).status_code == 200

    overview = httpx.get(f"{server.url}/admin/", headers=JSON).json()
    flagged = [(row["provider"], row["model"], row["drift_pct"]) for row in overview["spend_drift"]]
    assert flagged == [("openai", "gpt-4.1-nano", 11.11)]
    page = httpx.get(f"{server.url}/admin/").text
    assert "Spend drift:" in page and "gpt-4.1-nano" in page
    ratio = "gateway_spend_drift_ratio"
    assert server.metric(ratio, provider="openai", model="gpt-4.1-nano") == 0.1111
    assert server.metric(ratio, provider="openai", model="gpt-4.1-mini") == 0.0
    assert server.metric(ratio, provider="anthropic", model="claude-haiku-4-5") == 0.0
    drifts = [
        line
        for line in httpx.get(f"{server.url}/metrics").text.splitlines()
        if line.startswith(ratio)
    ]
    assert not [line for line in drifts if "gpt-4o-mini" in line]  # billed nothing: no ratio

    for kind in ("openai", "anthropic"):
        costs_of(fakes, kind).clear()
    bill(fakes, spent)  # the bills caught up
    assert run(server).status_code == 200
    assert httpx.get(f"{server.url}/admin/", headers=JSON).json()["spend_drift"] == []
    assert "Spend drift:" not in httpx.get(f"{server.url}/admin/").text


@pytest.mark.parametrize(
    ("ratios", "anthropic_down", "code"),
    [({}, False, 0), ({"nano": 0.9}, False, 1), ({}, True, 2)],
    ids=["equal", "ten-percent-lower", "anthropic-down"],
)
def test_the_reconcile_command_prints_the_table_and_exits_1_on_drift(
    server: GatewayServer,
    fakes: dict[str, FakeUpstream],
    spent: dict[str, Decimal],
    ratios: dict[str, float],
    anthropic_down: bool,
    code: int,
) -> None:
    bill(fakes, spent, **ratios)
    if anthropic_down:
        fakes["anthropic"].answer_when(
            lambda recorded: recorded.path == COST_REPORT_PATH,
            Reply.of_error(500, "Internal server error"),
        )

    result = manage("reconcile", "--days", "40", env=server.env)

    assert result.returncode == code, result.stderr
    header, *lines = result.stdout.splitlines()
    assert header.split() == [
        "provider", "day", "model", "billed_usd", "computed_usd", "drift_usd", "drift_pct",
    ]  # fmt: skip
    today = datetime.now(UTC).date().isoformat()
    nano = next(line for line in lines if "gpt-4.1-nano" in line and today in line).split()
    assert nano[-2:] == ["11.11", "!"] if ratios else nano[-1] == "0.00"
    assert billing_calls(fakes["openai"], COSTS_PATH)[0].query["limit"] == ["40"]
    if anthropic_down:
        assert "anthropic: GET" in result.stderr and "answered 500" in result.stderr
        return
    # 40 days: the cost report answers 31 daily buckets a page, today's on the second one.
    first, second = billing_calls(fakes["anthropic"], COST_REPORT_PATH)
    assert first.query["limit"] == ["31"] and "page" not in first.query
    assert second.query["page"][0].startswith("page_")  # the token the first page gave
    haiku = next(line for line in lines if "claude-haiku-4-5" in line and today in line).split()
    assert haiku[3:5] == ["0.150000", "0.150000"]


def test_a_second_run_while_a_fetch_is_under_way_answers_202(
    server: GatewayServer, fakes: dict[str, FakeUpstream], spent: dict[str, Decimal]
) -> None:
    openai_fake = fakes["openai"]
    held = openai_fake.gauge(lambda recorded: recorded.path == COSTS_PATH)
    nothing = {"object": "page", "data": [], "has_more": False, "next_page": None}
    openai_fake.answer_when(
        lambda recorded: recorded.path == COSTS_PATH, Reply(raw_body=nothing, delay=2.0)
    )
    first: dict[str, httpx.Response] = {}
    running = threading.Thread(target=lambda: first.update(response=run(server)))
    running.start()
    wait_for(lambda: held.now == 1, "the first fetch waiting on OpenAI's answer")

    second = run(server)
    page = httpx.get(f"{server.url}/admin/reconciliation").text
    running.join(30)

    assert second.status_code == 202
    assert set(second.json()) == {"data", "errors"}
    assert "a fetch is under way" in page
    assert first["response"].status_code == 200
    assert len(billing_calls(openai_fake, COSTS_PATH)) == 1


def test_the_day_s_fetch_is_done_once_across_processes(server: GatewayServer) -> None:
    """Both workers looked at start; one fetched, the other found the day's fetch taken."""
    (fetch,) = daily_fetches(server)
    looked = events(server, "reconciliation_daily_done_elsewhere") + events(
        server, "reconciliation_daily_under_way_elsewhere"
    )
    assert {event["pid"] for event in looked} == set(server.worker_pids()) - {fetch["pid"]}
    assert set(fetch["providers"]) == {"openai", "anthropic"} and fetch["failed"] == {}


def test_get_takes_the_days_and_refuses_a_window_out_of_range(server: GatewayServer) -> None:
    today = datetime.now(UTC).date()
    one = httpx.get(f"{server.url}/admin/reconciliation?days=1", headers=JSON).json()
    assert {row["day"] for row in one["data"]} <= {today.isoformat()}
    refused = httpx.get(f"{server.url}/admin/reconciliation?days=91", headers=JSON)
    assert refused.status_code == 400


@pytest.fixture
def page() -> Iterator[Page]:
    with chromium_page() as page:
        yield page


def test_the_page_charts_each_provider_and_fetches_on_demand(
    page: Page, server: GatewayServer, fakes: dict[str, FakeUpstream], spent: dict[str, Decimal]
) -> None:
    bill(fakes, spent, nano=0.9)
    assert run(server).status_code == 200
    page.goto(f"{server.url}/admin/")
    expect(page.locator("#spend-drift")).to_contain_text("gpt-4.1-nano")
    page.get_by_role("navigation").get_by_role("link", name="Reconciliation").click()

    for provider in ("openai", "anthropic"):
        chart = page.get_by_role("img", name=re.compile(f"^{provider}: billed and computed"))
        expect(chart).to_be_visible()
        assert chart.locator("rect.bar").count() >= 2
    flagged = page.locator("tr.flagged")
    expect(flagged).to_have_count(1)
    expect(flagged).to_contain_text("gpt-4.1-nano")
    expect(flagged).to_contain_text("11.11")
    shot(page, "reconciliation")

    for kind in ("openai", "anthropic"):
        costs_of(fakes, kind).clear()
    bill(fakes, spent)  # the bills caught up
    page.get_by_role("button", name="Fetch the bills now").click()

    expect(page).to_have_url(re.compile(r"/admin/reconciliation$"))
    expect(page.locator("tr.flagged")).to_have_count(0)
    expect(page.locator("tr[data-model='gpt-4.1-nano']").first).to_contain_text("0.00")
