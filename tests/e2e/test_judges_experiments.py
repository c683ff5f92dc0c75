"""Judges score replies in the background, experiments route between agents, through the
real server."""

import json
import sqlite3
import sys
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import openai
import pytest
from playwright.sync_api import expect

from tests.browser import chromium_page, shot
from tests.configs import ORIGINAL_EXAMPLE
from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.mcp_servers import GREETER
from tests.polling import wait_for
from tests.server import GatewayServer
from tests.upstreams import FAKE_CLASSES, api_key_of, fake_base_url

KINDS = list(FAKE_CLASSES)
JSON = {"Accept": "application/json"}
VERDICT = {
    "accuracy": {"score": 8, "reasoning": "The facts are right."},
    "helpfulness": {"score": 6, "reasoning": "It answers, briefly."},
}


def is_judge_call(recorded: Recorded) -> bool:
    return "impartial judge" in json.dumps(recorded.body)


def judges_answer(fake: FakeUpstream, verdict: dict[str, Any] = VERDICT) -> None:
    fake.answer_when(is_judge_call, Reply.of_text(json.dumps(verdict)))


def config_text(upstreams: dict[str, FakeUpstream]) -> str:
    lines = ["providers:"]
    for kind, fake in upstreams.items():
        lines.append(
            f"  {kind}: {{api_key: {api_key_of(kind)}, base_url: '{fake_base_url(fake)}', timeout: 10}}"
        )
    rubrics = "{accuracy: Are the facts right?, helpfulness: Does it answer?}"
    lines.append("judges:")
    lines += [
        f"  - {{name: judge-{kind}, provider: {kind}, model: judge-{kind}-model, rubrics: {rubrics}}}"
        for kind in KINDS
    ]
    lines += [
        "  - {name: never, provider: openai, model: never-model, sampling_rate: 0, rubrics: {accuracy: x}}",
        "  - {name: failing, provider: deepseek, model: failing-model, rubrics: {accuracy: x}}",
        "agents:",
        f"  - {{name: judged, provider: openai, model: judged-model, judges: [{', '.join(f'judge-{k}' for k in KINDS)}, never]}}",
        "  - {name: fragile, provider: openai, model: fragile-model, judges: [failing]}",
        "  - {name: split-a, provider: openai, model: split-a-model}",
        "  - {name: split-b, provider: groq, model: split-b-model}",
        "  - {name: shadow-a, provider: openai, model: shadow-a-model, preamble: You are A., judges: [judge-cohere]}",
        "  - {name: shadow-b, provider: anthropic, model: shadow-b-model, preamble: You are B., judges: [judge-cohere]}",
        "  - {name: bandit-a, provider: openai, model: bandit-a-model, judges: [judge-gemini]}",
        "  - {name: bandit-b, provider: groq, model: bandit-b-model, judges: [judge-gemini]}",
        "  - {name: caller, provider: openai, model: caller-model, subagents: [exp-split]}",
        "experiments:",
        "  - {name: exp-split, strategy: split, variants: [{agent: split-a}, {agent: split-b}]}",
        "  - {name: exp-shadow, strategy: shadow, primary: shadow-a, variants: [{agent: shadow-a}, {agent: shadow-b}]}",
        "  - name: exp-bandit",
        "    strategy: bandit",
        "    metric: judge-gemini.accuracy",
        "    epsilon: 0",
        "    min_samples: 2",
        "    variants: [{agent: bandit-a}, {agent: bandit-b}]",
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    gateway = GatewayServer(tmp_path_factory.mktemp("judges"), config_text(upstreams)).start()
    yield gateway
    gateway.stop()


@pytest.fixture
def client(server: GatewayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0)


def rows(server: GatewayServer, query: str, *parameters: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(server.workdir / "gateway.sqlite3") as database:
        return database.execute(query, parameters).fetchall()


def ask(client: openai.OpenAI, model: str, user: str, text: str = "Hello?") -> Any:
    return client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": text}], safety_identifier=user
    )


def test_a_judge_on_each_provider_kind_scores_every_criterion(
    client: openai.OpenAI, server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    for kind in KINDS:
        judges_answer(fakes[kind])

    reply = ask(client, "judged", user_id, "What is the capital of Peru?")

    assert reply.choices[0].message.content == "You said: What is the capital of Peru?"
    scores = wait_for(
        lambda: (
            (s := httpx.get(f"{server.url}/admin/scores?agent=judged", headers=JSON).json()["data"])
            and len([r for r in s if r["completion_id"] == reply.id]) == 12
            and s
        ),
        "twelve scores",
    )
    mine = [row for row in scores if row["completion_id"] == reply.id]
    assert sorted((row["judge"], row["criterion"], row["score"]) for row in mine) == sorted(
        (f"judge-{kind}", criterion, VERDICT[criterion]["score"])
        for kind in KINDS
        for criterion in VERDICT
    )
    assert {row["user"] for row in mine} == {user_id}
    assert {row["judge_model"] for row in mine} == {f"judge-{kind}-model" for kind in KINDS}
    assert all(row["reasoning"] for row in mine)
    assert "never" not in {row["judge"] for row in mine}
    judged = next(r for r in fakes["anthropic"].requests if is_judge_call(r))
    assert "What is the capital of Peru?" in json.dumps(judged.body)
    assert reply.choices[0].message.content in json.dumps(judged.body)


def test_a_failing_judge_is_recorded_and_leaves_the_reply_intact(
    client: openai.OpenAI, server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes["deepseek"].answer_when(is_judge_call, Reply.of_error(500, "the judge's model is down"))

    reply = ask(client, "fragile", user_id)

    assert reply.choices[0].message.content == "You said: Hello?"
    runs = wait_for(
        lambda: rows(
            server,
            "SELECT judge, status, error FROM inference_judgerun WHERE completion_id = ?",
            reply.id,
        ),
        "the failed run",
    )
    assert runs == [
        ("failing", "failed", "deepseek failed with status 500: the judge's model is down")
    ]
    assert rows(
        server, "SELECT COUNT(*) FROM inference_judgescore WHERE completion_id = ?", reply.id
    ) == [(0,)]


def test_split_keeps_each_user_on_one_variant_and_one_history(
    client: openai.OpenAI, server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    users = [f"split-user-{n}" for n in range(24)]
    for user in users:
        ask(client, "exp-split", user, "first")
        ask(client, "exp-split", user, "second")

    ledger = rows(
        server,
        "SELECT user_id, experiment, variant, agent FROM inference_ledgerentry WHERE kind = 'turn' AND user_id LIKE 'split-user-%'",
    )
    by_user: dict[str, set[str]] = {}
    for user, experiment, variant, agent in ledger:
        assert experiment == "exp-split" and variant == agent
        by_user.setdefault(user, set()).add(variant)
    assert all(len(variants) == 1 for variants in by_user.values())  # sticky
    assert {next(iter(v)) for v in by_user.values()} == {"split-a", "split-b"}  # both used
    history = rows(
        server,
        "SELECT DISTINCT model FROM inference_storedmessage WHERE user_id LIKE 'split-user-%'",
    )
    assert history == [("exp-split",)]
    second_calls = [
        r
        for kind in ("openai", "groq")
        for r in fakes[kind].requests
        if "second" in json.dumps(r.body)
    ]
    assert len(second_calls) == 24
    assert all("first" in json.dumps(r.body) for r in second_calls)  # the history, whatever variant


def test_shadow_variant_runs_in_the_background_judged_but_neither_stored_nor_billed(
    client: openai.OpenAI, server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    judges_answer(fakes["cohere"])

    reply = ask(client, "exp-shadow", user_id, "Compare.")

    assert reply.choices[0].message.content == "You said: Compare."
    scores = wait_for(
        lambda: (
            rows(
                server,
                "SELECT variant, completion_id FROM inference_judgescore WHERE experiment = 'exp-shadow' AND user_id = ?",
                user_id,
            )
            if len(rows(server, "SELECT id FROM inference_judgescore WHERE user_id = ?", user_id))
            == 4
            else None
        ),
        "both variants judged",
    )
    assert sorted(variant for variant, _ in scores) == [
        "shadow-a",
        "shadow-a",
        "shadow-b",
        "shadow-b",
    ]
    shadow_ids = {completion for variant, completion in scores if variant == "shadow-b"}
    assert all(completion.startswith("shadow-") for completion in shadow_ids)
    shadow_call = fakes["anthropic"].last.body
    assert shadow_call["system"] == "You are B." and shadow_call["model"] == "shadow-b-model"
    billed = "SELECT agent, variant FROM inference_ledgerentry WHERE kind = 'turn' AND user_id = ?"
    assert rows(server, billed, user_id) == [("shadow-a", "shadow-a")]
    # What the shadow and the judges spent is charged to the experiment, not billed.
    charged = "SELECT kind, agent FROM inference_ledgerentry WHERE kind != 'turn' AND user_id = ?"
    assert ("shadow", "shadow-b") in rows(server, charged, user_id)
    stored = rows(
        server, "SELECT role, content FROM inference_storedmessage WHERE user_id = ?", user_id
    )
    assert stored == [("user", "Compare."), ("assistant", "You said: Compare.")]


def insert_scores(server: GatewayServer, variant: str, score: int, count: int) -> None:
    now = datetime.now(UTC)
    with sqlite3.connect(server.workdir / "gateway.sqlite3") as database:
        for n in range(count):
            # As Django writes datetimes in SQLite: UTC, without an offset.
            created = (now - timedelta(minutes=n)).strftime("%Y-%m-%d %H:%M:%S.%f")
            run = database.execute(
                "INSERT INTO inference_judgerun (completion_id, user_id, agent, experiment, variant, judge,"
                " judge_model, status, error, created_at) VALUES (?, 'seed', ?, 'exp-bandit', ?, 'judge-gemini',"
                " 'm', 'ok', '', ?)",
                (f"seed-{variant}-{n}", variant, variant, created),
            ).lastrowid
            database.execute(
                "INSERT INTO inference_judgescore (run_id, completion_id, user_id, agent, experiment, variant,"
                " judge, criterion, score, reasoning, judge_model, created_at) VALUES (?, ?, 'seed', ?,"
                " 'exp-bandit', ?, 'judge-gemini', 'accuracy', ?, 'seeded', 'm', ?)",
                (run, f"seed-{variant}-{n}", variant, variant, score, created),
            )


@pytest.mark.slow
def test_two_processes_agree_on_sticky_variants_and_bandit_means(
    server: GatewayServer, fakes: dict[str, FakeUpstream], tmp_path_factory: pytest.TempPathFactory
) -> None:
    judges_answer(fakes["gemini"])
    second = GatewayServer(
        tmp_path_factory.mktemp("second"), None, server.database_url, server.config_path
    ).start()
    try:
        clients = [
            openai.OpenAI(base_url=f"{s.url}/v1", api_key="x", max_retries=0)
            for s in (server, second)
        ]
        for n in range(8):
            user = f"agree-{n}"
            for process_client in clients:
                ask(process_client, "exp-split", user)
        variants = rows(
            server,
            "SELECT user_id, COUNT(DISTINCT variant) FROM inference_ledgerentry WHERE kind = 'turn' AND user_id LIKE 'agree-%' GROUP BY user_id",
        )
        assert len(variants) == 8 and {count for _, count in variants} == {1}

        insert_scores(server, "bandit-a", 2, 3)
        insert_scores(server, "bandit-b", 9, 3)
        for process_client in clients:
            for _ in range(3):
                ask(process_client, "exp-bandit", "bandit-user")
        chosen = rows(
            server,
            "SELECT DISTINCT variant FROM inference_ledgerentry WHERE kind = 'turn' AND user_id = 'bandit-user'",
        )
        assert chosen == [("bandit-b",)]  # epsilon 0: both processes exploit the same means
        wait_for(
            lambda: (
                rows(
                    server, "SELECT COUNT(*) FROM inference_judgerun WHERE user_id = 'bandit-user'"
                )[0][0]
                == 6
            ),
            "the bandit replies' judges",
        )
    finally:
        second.stop()


def test_models_list_agents_only_and_retrieve_experiments(
    server: GatewayServer, client: openai.OpenAI
) -> None:
    listed = [model.id for model in client.models.list().data]

    assert "judged" in listed and "exp-split" not in listed
    assert client.models.retrieve("exp-split").id == "exp-split"
    assert client.models.retrieve("judged").owned_by == "agent-gateway"
    with pytest.raises(openai.NotFoundError) as missing:
        client.models.retrieve("nobody")
    assert missing.value.body["code"] == "model_not_found"


def test_subagent_named_after_an_experiment_gets_the_users_variant(
    client: openai.OpenAI, server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    user = "subagent-user"
    ask(client, "exp-split", user, "Which variant?")
    (variant,) = rows(
        server,
        "SELECT variant FROM inference_ledgerentry WHERE kind = 'turn' AND user_id = ?",
        user,
    )[0]
    variant_fake = fakes["openai" if variant == "split-a" else "groq"]
    fakes["openai"].script(Reply.of_tool_calls(("exp-split", {"message": "Help me."})))
    if variant == "split-a":  # the variant's call comes between the caller's two rounds
        fakes["openai"].script(Reply.of_text("Variant help."))
    else:
        fakes["groq"].script(Reply.of_text("Variant help."))
    fakes["openai"].script(Reply.of_text("Done with help."))
    variant_fake.requests.clear()

    reply = ask(client, "caller", user, "Ask the experiment.")

    assert reply.choices[0].message.content == "Done with help."
    assert any(r.body.get("model") == f"{variant}-model" for r in variant_fake.requests)


def test_a_hand_edit_adds_an_experiment_that_routes_at_once(
    server: GatewayServer, client: openai.OpenAI
) -> None:
    original = server.config_path.read_text()
    server.config_path.write_text(
        original + "  - {name: exp-new, strategy: split, variants: [{agent: split-b}]}\n"
    )
    try:
        reply = wait_for(
            lambda: (
                httpx.post(
                    f"{server.url}/v1/chat/completions",
                    json={
                        "model": "exp-new",
                        "messages": [{"role": "user", "content": "New?"}],
                        "user": "edit-user",
                    },
                ).status_code
                == 200
            ),
            "the new experiment",
        )
        assert reply
        assert rows(
            server,
            "SELECT experiment, variant FROM inference_ledgerentry WHERE kind = 'turn' AND user_id = 'edit-user'",
        )[0] == (
            "exp-new",
            "split-b",
        )
    finally:
        server.config_path.write_text(original)


def test_experiment_stats_and_scores_pages(server: GatewayServer) -> None:
    stats = httpx.get(f"{server.url}/admin/experiments/exp-bandit/stats", headers=JSON).json()

    assert stats["experiment"] == "exp-bandit" and stats["strategy"] == "bandit"
    by_variant = {variant["agent"]: variant for variant in stats["variants"]}
    assert set(by_variant) == {"bandit-a", "bandit-b"}
    assert by_variant["bandit-a"]["scores"]["judge-gemini.accuracy"] == 2.0
    assert by_variant["bandit-b"]["requests"] == 6 and by_variant["bandit-b"]["users"] == 1
    page = httpx.get(
        f"{server.url}/admin/experiments/exp-bandit", headers={"Accept": "text/html"}
    ).text
    assert "<svg" in page and "judge-gemini.accuracy by variant" in page
    assert httpx.get(f"{server.url}/admin/experiments/nope/stats", headers=JSON).status_code == 404
    filtered = httpx.get(
        f"{server.url}/admin/scores?experiment=exp-bandit&judge=judge-gemini", headers=JSON
    ).json()
    assert filtered["data"] and {row["experiment"] for row in filtered["data"]} == {"exp-bandit"}


def seed_trend(server: GatewayServer) -> None:
    """A day and a half of hourly scores for both variants of exp-shadow, two criteria."""
    now = datetime.now(UTC)
    with sqlite3.connect(server.workdir / "gateway.sqlite3") as database:
        for hour in range(36):
            created = (now - timedelta(hours=hour)).strftime("%Y-%m-%d %H:%M:%S.%f")
            for variant, base in (("shadow-a", 6), ("shadow-b", 4)):
                run = database.execute(
                    "INSERT INTO inference_judgerun (completion_id, user_id, agent, experiment,"
                    " variant, judge, judge_model, status, error, created_at) VALUES (?, 'trend',"
                    " ?, 'exp-shadow', ?, 'judge-cohere', 'm', 'ok', '', ?)",
                    (f"trend-{variant}-{hour}", variant, variant, created),
                ).lastrowid
                for criterion, shift in (("accuracy", 1), ("helpfulness", -1)):
                    score = max(0, min(10, base + shift + (hour % 5) - 2 + (36 - hour) // 12))
                    database.execute(
                        "INSERT INTO inference_judgescore (run_id, completion_id, user_id, agent,"
                        " experiment, variant, judge, criterion, score, reasoning, judge_model,"
                        " created_at) VALUES (?, ?, 'trend', ?, 'exp-shadow', ?, 'judge-cohere', ?, ?,"
                        " 'seeded', 'm', ?)",
                        (
                            run,
                            f"trend-{variant}-{hour}",
                            variant,
                            variant,
                            criterion,
                            score,
                            created,
                        ),
                    )


@pytest.mark.browser
def test_score_charts_draw_in_the_browser(server: GatewayServer) -> None:
    seed_trend(server)
    with chromium_page() as page:
        page.goto(f"{server.url}/admin/experiments/exp-shadow")
        charts = page.locator("figure.chart")
        expect(charts).to_have_count(2)
        for index in range(2):
            chart = charts.nth(index)
            expect(chart.locator("g.series")).to_have_count(2)
            for line in chart.locator("polyline").all():
                box = line.bounding_box()
                assert box is not None and box["width"] > 200 and box["height"] > 5
        expect(page.locator("figcaption").first).to_have_text("judge-cohere.accuracy by variant")
        expect(page.get_by_role("cell", name="shadow-a", exact=True)).to_be_visible()
        shot(page, "experiment-results")

        page.goto(f"{server.url}/admin/agents/shadow-b")
        chart = page.locator("figure.chart")
        expect(chart.locator("g.series")).to_have_count(2)
        expect(chart.locator("ul.legend")).to_contain_text("judge-cohere.helpfulness")
        shot(page, "agent-scores")

        page.goto(f"{server.url}/admin/scores?experiment=exp-shadow")
        expect(page.locator("figure.chart")).to_have_count(2)
        expect(page.locator("tbody tr").first).to_contain_text("judge-cohere")
        shot(page, "scores")


def test_the_original_example_configs_judges_and_experiment_run_as_written(
    tmp_path_factory: pytest.TempPathFactory,
    upstreams: dict[str, FakeUpstream],
    fakes: dict[str, FakeUpstream],
) -> None:
    """The full config in the original service's format (tests/configs), its judge and
    its split experiment as written; only what cannot run here is changed: the
    providers' endpoints (the fakes) and the MCP server's command."""
    text = ORIGINAL_EXAMPLE.read_text()
    for kind in ("anthropic", "openai", "gemini"):
        text = text.replace(
            f"  {kind}:\n    api_key:",
            f"  {kind}:\n    base_url: '{fake_base_url(upstreams[kind])}'\n    api_key:",
        )
    text = text.replace(
        "command: python\n    args:\n      - -m\n      - greeter_server",
        f"command: '{sys.executable}'\n    args:\n      - '{GREETER}'",
    )
    verdict = {
        criterion: {"score": 7, "reasoning": "Fine."}
        for criterion in ("accuracy", "helpfulness", "tone")
    }
    judges_answer(fakes["openai"], verdict)
    example = GatewayServer(tmp_path_factory.mktemp("example"), text).start()
    try:
        client = openai.OpenAI(base_url=f"{example.url}/v1", api_key="x", max_retries=0)
        reply = ask(client, "assistant", "example-user", "Hi there")
        assert reply.choices[0].message.content == "You said: Hi there"
        scores = wait_for(
            lambda: (
                (
                    found := rows(
                        example,
                        "SELECT experiment, variant, judge, criterion, score FROM inference_judgescore",
                    )
                )
                and len(found) == 3
                and found
            ),
            "the quality judge's three scores",
        )
        (experiment, variant) = {(row[0], row[1]) for row in scores}.pop()
        assert experiment == "assistant" and variant in ("gpt-assistant", "claude-assistant")
        assert sorted((row[2], row[3], row[4]) for row in scores) == [
            ("quality", "accuracy", 7), ("quality", "helpfulness", 7), ("quality", "tone", 7),
        ]  # fmt: skip
    finally:
        example.stop()


@pytest.mark.slow
def test_judges_wait_for_nothing_and_shutdown_lets_quick_ones_finish_and_cancels_the_rest(
    tmp_path_factory: pytest.TempPathFactory,
    upstreams: dict[str, FakeUpstream],
    fakes: dict[str, FakeUpstream],
) -> None:
    openai_fake = fakes["openai"]
    config = (
        f"providers: {{openai: {{api_key: {api_key_of('openai')}, base_url: '{fake_base_url(openai_fake)}'}}}}\n"
        "judges:\n"
        "  - {name: quick, provider: openai, model: quick-model, rubrics: {accuracy: x}}\n"
        "  - {name: slow, provider: openai, model: slow-model, rubrics: {accuracy: x}}\n"
        "agents: [{name: patient, provider: openai, model: m, judges: [quick, slow]}]\n"
    )
    verdict = json.dumps({"accuracy": {"score": 5, "reasoning": "Fine."}})
    # The quick judge answers well after the reply, and well within the 5 s shutdown grace.
    for model, delay in (("quick-model", 1.5), ("slow-model", 60.0)):
        openai_fake.answer_when(
            lambda recorded, model=model: recorded.body.get("model") == model,
            Reply.of_text(verdict, delay=delay),
        )
    server = GatewayServer(tmp_path_factory.mktemp("shutdown"), config).start()
    try:
        client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0)
        reply = ask(client, "patient", "judged-user")
        # The reply came back while the judges were still waiting for their model.
        assert rows(server, "SELECT judge FROM inference_judgerun") == []
    finally:
        server.stop()  # SIGTERM: pending background work gets a few seconds
    events = [json.loads(line) for line in server.log().splitlines()]
    assert [
        (event["judge"], event["status"]) for event in events if event.get("event") == "judged"
    ] == [("quick", "ok"), ("slow", "cancelled")], server.log()[-3000:]
    assert rows(server, "SELECT judge, status, completion_id FROM inference_judgerun") == [
        ("quick", "ok", reply.id)
    ]
