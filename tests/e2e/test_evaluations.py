"""Evaluations on recorded traffic (docs/evaluations.md), through a real gateway: turns
recorded with the OpenAI SDK, replayed through two cheaper candidates and judged; the
summary's figures computed here from what the fakes were told to answer."""

import json
import re
import sqlite3
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from playwright.sync_api import Page, expect

from tests.browser import chromium_page, shot
from tests.e2e.test_management_commands import manage
from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.polling import wait_for
from tests.server import GatewayServer

JSON = {"Accept": "application/json"}
USERS = ["ada", "bob", "cy", "dee"]
TURNS = 20  # five per user, in turn
CRITERIA = ("accuracy", "helpfulness")
# USD per million tokens; the judge's price is high, so judging counted in a candidate's
# cost would show.
PRICES = {
    "gpt-model": (10, 30),
    "cheap-a-model": (1, 2),
    "cheap-b-model": (0.5, 1),
    "grader-model": (1000, 1000),
}
A_TOKENS, B_TOKENS, RECORDED_TOKENS = (100, 50), (80, 20), (11, 7)


def question(n: int) -> str:
    return f"Question {n:02d} from {USERS[n % len(USERS)]}"


def alpha(n: int) -> str:
    return f"Alpha answer {n:02d}."


def beta(n: int) -> str:
    return f"Beta answer {n:02d}."


def original(n: int) -> str:
    return f"You said: {question(n)}"  # what the fake answered when the turn was recorded


# The judge's scores of each reply, by case.
SCORES: dict[str, Callable[[int], dict[str, int]]] = {
    "cheap-a": lambda n: {"accuracy": 4 + n % 5, "helpfulness": 7},
    "cheap-b": lambda n: {"accuracy": 5 + n % 3, "helpfulness": 6},
    "original": lambda n: {"accuracy": 6, "helpfulness": 6},
}
REPLIES: dict[str, Callable[[int], str]] = {
    "cheap-a": alpha,
    "cheap-b": beta,
    "original": original,
}


def config_text(openai_url: str) -> str:
    pricing = "\n".join(
        f"  openai/{model}: {{input: {given}, output: {out}}}"
        for model, (given, out) in PRICES.items()
    )
    return f"""
providers:
  openai: {{api_key: sk-test, base_url: '{openai_url}', timeout: 10}}
pricing:
{pricing}
judges:
  - name: grader
    provider: openai
    model: grader-model
    rubrics: {{accuracy: Are the facts right?, helpfulness: Does it answer?}}
agents:
  - {{name: gpt, provider: openai, model: gpt-model, preamble: You are GPT., judges: [grader]}}
  - {{name: cheap-a, provider: openai, model: cheap-a-model, preamble: You are cheap A.}}
  - {{name: cheap-b, provider: openai, model: cheap-b-model, preamble: You are cheap B.}}
  - {{name: forgetful, provider: openai, model: forgetful-model, history: false, judges: [grader]}}
evaluations: {{concurrency: 2}}
"""


def is_judge(recorded: Recorded) -> bool:
    return recorded.body.get("model") == "grader-model"


def judging(reply: str) -> Callable[[Recorded], bool]:
    """A judge's call that quotes ``reply``."""
    return lambda recorded: is_judge(recorded) and reply in json.dumps(recorded.body)


def is_candidate(recorded: Recorded) -> bool:
    return recorded.body.get("model") in ("cheap-a-model", "cheap-b-model")


def verdict(scores: dict[str, int]) -> Reply:
    return Reply.of_text(
        json.dumps(
            {key: {"score": value, "reasoning": "So it is."} for key, value in scores.items()}
        )
    )


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    """A gateway with ``TURNS`` turns of ``gpt`` recorded (and judged live)."""
    fake = upstreams["openai"]
    assert isinstance(fake, OpenAIUpstream)
    gateway = GatewayServer(
        tmp_path_factory.mktemp("evaluations"), config_text(fake.base_url)
    ).start()
    fake.reset()
    fake.answer_when(is_judge, verdict({"accuracy": 5, "helpfulness": 5}))
    client = openai.OpenAI(base_url=f"{gateway.url}/v1", api_key="x", max_retries=0)
    for n in range(TURNS):
        client.chat.completions.create(
            model="gpt",
            messages=[{"role": "user", "content": question(n)}],
            safety_identifier=USERS[n % len(USERS)],
        )
    wait_for(lambda: len(live_scores(gateway)) == TURNS * len(CRITERIA), "the live judges")
    fake.reset()
    yield gateway
    gateway.stop()


def live_scores(server: GatewayServer) -> list[dict[str, Any]]:
    return get(server, "/admin/scores?agent=gpt")["data"]


def get(server: GatewayServer, path: str) -> Any:
    response = httpx.get(f"{server.url}{path}", headers=JSON, timeout=10)
    assert response.status_code == 200, response.text
    return response.json()


def start(server: GatewayServer, **body: Any) -> httpx.Response:
    return httpx.post(f"{server.url}/admin/evaluations", json=body, timeout=10)


def finished(server: GatewayServer, evaluation_id: int) -> dict[str, Any]:
    return wait_for(
        lambda: (
            (found := get(server, f"/admin/evaluations/{evaluation_id}"))["status"] != "running"
            and found
        ),
        f"evaluation {evaluation_id} to end",
    )


def case_number(text: str) -> int:
    found = re.search(r"Question (\d\d)", text)
    assert found is not None
    return int(found.group(1))


def script_the_replay(fake: OpenAIUpstream, delay: float = 0.0) -> None:
    """Each candidate answers each question its own way; the judge scores each reply by
    the reply its request quotes."""
    for n in range(TURNS):
        asked = question(n)
        for model, text, (prompt, completion) in (
            ("cheap-a-model", alpha(n), A_TOKENS),
            ("cheap-b-model", beta(n), B_TOKENS),
        ):
            fake.answer_when(
                lambda r, model=model, asked=asked: (
                    r.body.get("model") == model and fake.last_user_text(r) == asked
                ),
                Reply.of_text(
                    text, prompt_tokens=prompt, completion_tokens=completion, delay=delay
                ),
            )
        for whose, reply in REPLIES.items():
            fake.answer_when(judging(reply(n)), verdict(SCORES[whose](n)))


def expected_summary(cases: list[int]) -> dict[str, dict[str, Any]]:
    """The figures the summary must show for ``cases``, computed from the script."""
    figures: dict[str, dict[str, Any]] = {}
    for whose in ("cheap-a", "cheap-b", "original"):
        scored = [SCORES[whose](n) for n in cases]
        means = {
            f"grader.{criterion}": sum(s[criterion] for s in scored) / len(scored)
            for criterion in CRITERIA
        }
        tally = {"win": 0, "tie": 0, "loss": 0}
        for n in cases:
            ours = sum(SCORES[whose](n).values()) / len(CRITERIA)
            theirs = sum(SCORES["original"](n).values()) / len(CRITERIA)
            tally["tie" if ours == theirs else "win" if ours > theirs else "loss"] += 1
        figures[whose] = {"means": means, **tally}
    figures["cheap-a"]["cost"] = cost("cheap-a-model", A_TOKENS)
    figures["cheap-b"]["cost"] = cost("cheap-b-model", B_TOKENS)
    figures["original"]["cost"] = cost("gpt-model", RECORDED_TOKENS)
    return figures


def cost(model: str, tokens: tuple[int, int]) -> float:
    given, out = PRICES[model]
    return (tokens[0] * given + tokens[1] * out) / 1e6


def query(server: GatewayServer, statement: str, *parameters: Any) -> list[tuple[Any, ...]]:
    with sqlite3.connect(server.workdir / "gateway.sqlite3") as database:
        return database.execute(statement, parameters).fetchall()


def test_replaying_recorded_turns_gives_the_scripted_figures_and_bills_no_user(
    server: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    script_the_replay(openai_fake)
    history = {user: get(server, f"/admin/conversations?user={user}")["data"] for user in USERS}
    usage = {user: get(server, f"/admin/usage?user={user}") for user in USERS}
    spend_by_user = get(server, "/admin/spend?group_by=user")["data"]

    started = start(
        server, name="cheaper?", candidates=["cheap-a", "cheap-b"], source={"agent": "gpt"}
    )

    assert started.status_code == 202, started.text
    assert started.json() == {"id": started.json()["id"], "status": "running", "total": TURNS}
    evaluation = finished(server, started.json()["id"])
    assert evaluation["status"] == "done", evaluation
    assert evaluation["progress"] == {"done": TURNS, "total": TURNS}
    assert evaluation["judges"] == ["grader"]  # the source agent's
    assert evaluation["source"] == {
        "agent": "gpt",
        "experiment": None,
        "since": None,
        "until": None,
        "users": [],
        "limit": 50,
    }
    assert evaluation["error"] is None and evaluation["finished_at"]
    expected = expected_summary(list(range(TURNS)))
    summary = {entry["agent"]: entry for entry in evaluation["summary"]}
    assert [entry["agent"] for entry in evaluation["summary"]] == ["cheap-a", "cheap-b", "original"]
    # The original's latency is its recorded turns', as their request records tell it.
    [(recorded_latency, recorded)] = query(
        server,
        "SELECT avg(r.latency_ms), count(*) FROM inference_requestrecord r "
        "JOIN inference_ledgerentry l ON l.completion_id = r.completion_id "
        "WHERE l.kind = 'turn' AND l.agent = 'gpt'",
    )
    assert recorded == TURNS and recorded_latency > 0
    for whose, figures in expected.items():
        entry = summary[whose]
        assert set(entry["scores"]) == set(figures["means"])
        for metric, mean in figures["means"].items():
            stats = entry["scores"][metric]
            assert stats["mean"] == pytest.approx(mean, abs=1e-4)
            assert stats["ci"][0] <= stats["mean"] <= stats["ci"][1]
            assert stats["n"] == TURNS
        assert entry["mean_cost_usd"] == pytest.approx(figures["cost"], rel=1e-6)
        if whose == "original":
            assert (entry["win"], entry["tie"], entry["loss"]) == (None, None, None)
            assert entry["mean_latency_ms"] == pytest.approx(
                recorded_latency, abs=0.051
            )  # to 0.1 ms
        else:
            assert (entry["win"], entry["tie"], entry["loss"]) == (
                figures["win"],
                figures["tie"],
                figures["loss"],
            )
            assert entry["mean_latency_ms"] > 0
            assert entry["failed"] == 0
    # The replay is built as a turn is: the candidate's preamble, the history, the question.
    third = question(2 * len(USERS) + 1)  # bob's third turn
    [asked] = [
        r
        for r in openai_fake.requests
        if r.body["model"] == "cheap-a-model" and openai_fake.last_user_text(r) == third
    ]
    assert asked.body["messages"] == [
        {"role": "system", "content": "You are cheap A."},
        {"role": "user", "content": question(1)},
        {"role": "assistant", "content": original(1)},
        {"role": "user", "content": question(5)},
        {"role": "assistant", "content": original(5)},
        {"role": "user", "content": third},
    ]
    # The cases: newest turn first, every reply with its cost, latency and scores.
    cases = get(server, f"/admin/evaluations/{evaluation['id']}/cases")
    assert cases["next"] is None
    assert [case_number(case["question"]) for case in cases["data"]] == list(reversed(range(TURNS)))
    newest = cases["data"][0]
    assert newest["user"] == USERS[(TURNS - 1) % len(USERS)]
    assert newest["original"]["reply"] == original(TURNS - 1)
    assert newest["original"]["scores"] == {
        f"grader.{k}": v for k, v in SCORES["original"](TURNS - 1).items()
    }
    replied = newest["candidates"]["cheap-b"]
    assert replied["reply"] == beta(TURNS - 1)
    assert replied["cost_usd"] == pytest.approx(cost("cheap-b-model", B_TOKENS))
    assert replied["latency_ms"] > 0
    assert replied["scores"] == {f"grader.{k}": v for k, v in SCORES["cheap-b"](TURNS - 1).items()}
    # Nothing reached the users: their history, usage and spend are as they were.
    for user in USERS:
        assert get(server, f"/admin/conversations?user={user}")["data"] == history[user]
        assert get(server, f"/admin/usage?user={user}") == usage[user]
    assert get(server, "/admin/spend?group_by=user")["data"] == spend_by_user
    rows = query(
        server,
        "SELECT kind, user_id, agent FROM inference_ledgerentry WHERE completion_id LIKE ?",
        f"evaluation-{evaluation['id']}-%",
    )
    assert {(kind, user) for kind, user, _ in rows} == {("evaluation", "")}
    assert {agent for _, _, agent in rows} == {"cheap-a", "cheap-b", "gpt"}
    # 20 replays each and 20 verdicts on each of the three replies.
    assert len(rows) == TURNS * 2 + TURNS * 3
    # No judge score of live traffic was added.
    assert len(live_scores(server)) == TURNS * len(CRITERIA)


def test_cancelling_stops_every_upstream_call(
    server: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.answer_when(is_candidate, Reply.of_text("Slowly.", delay=1.0))
    openai_fake.answer_when(is_judge, verdict({"accuracy": 5, "helpfulness": 5}))
    started = start(
        server,
        name="to cancel",
        candidates=["cheap-a", "cheap-b"],
        source={"agent": "gpt", "limit": 10},
    )
    assert started.status_code == 202, started.text
    evaluation_id = started.json()["id"]
    wait_for(lambda: any(is_candidate(r) for r in openai_fake.requests), "a candidate's call")

    cancelled = httpx.delete(f"{server.url}/admin/evaluations/{evaluation_id}", timeout=15)
    calls = len(openai_fake.requests)

    assert cancelled.status_code == 200, cancelled.text
    assert cancelled.json()["status"] == "cancelled"
    time.sleep(1.5)  # longer than a reply takes: a call started after the answer would show
    assert len(openai_fake.requests) == calls
    evaluation = get(server, f"/admin/evaluations/{evaluation_id}")
    assert evaluation["status"] == "cancelled"
    assert evaluation["progress"]["done"] < evaluation["progress"]["total"] == 10
    again = httpx.delete(f"{server.url}/admin/evaluations/{evaluation_id}", timeout=15)
    assert again.status_code == 409
    assert again.json()["error"]["code"] == "not_running"
    assert httpx.delete(f"{server.url}/admin/evaluations/999999", timeout=15).status_code == 404


def test_at_most_the_configured_number_of_candidate_calls_run_at_once(
    server: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    in_flight = openai_fake.gauge(is_candidate)
    openai_fake.answer_when(is_candidate, Reply.of_text("In a while.", delay=0.3))
    openai_fake.answer_when(is_judge, verdict({"accuracy": 5, "helpfulness": 5}))

    started = start(
        server, name="paced", candidates=["cheap-a", "cheap-b"], source={"agent": "gpt", "limit": 6}
    )

    evaluation = finished(server, started.json()["id"])
    assert evaluation["status"] == "done"
    assert len([r for r in openai_fake.requests if is_candidate(r)]) == 12
    assert in_flight.peak == 2  # evaluations.concurrency, never more, and reached


def test_an_evaluation_whose_gateway_stops_is_failed_with_the_reason(
    server: GatewayServer, openai_fake: OpenAIUpstream, tmp_path: Path
) -> None:
    """A second process on the same file and database runs it, then stops: stopped
    properly, it says so at once; killed, the next read finds its heartbeat too old."""
    openai_fake.answer_when(is_candidate, Reply.of_text("Slowly.", delay=1.0))
    other = GatewayServer(
        tmp_path, None, database_url=server.database_url, config_path=server.config_path
    )
    for ending, reason in (
        (other.stop, "the gateway stopped before the evaluation finished"),
        (other.kill, "the gateway process running it stopped before it finished"),
    ):
        other.start()
        started = start(other, name="orphan", candidates=["cheap-a"], source={"agent": "gpt"})
        evaluation_id = started.json()["id"]
        wait_for(lambda: any(is_candidate(r) for r in openai_fake.requests), "a candidate's call")
        ending()
        if ending == other.kill:  # as if the heartbeat's bound had passed since
            query(
                server,
                "UPDATE inference_evaluation SET heartbeat_at = datetime('now', '-2 minutes') "
                "WHERE id = ?",
                evaluation_id,
            )
        evaluation = get(server, f"/admin/evaluations/{evaluation_id}")
        assert evaluation["status"] == "failed"
        assert evaluation["error"].startswith(reason), evaluation["error"]
        openai_fake.requests.clear()


def test_the_source_picks_the_newest_turns_of_the_users_named(
    server: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    script_the_replay(openai_fake)
    started = start(
        server,
        name="ada only",
        candidates=["cheap-a"],
        source={"agent": "gpt", "users": ["ada"], "limit": 3},
    )
    assert started.status_code == 202, started.text
    assert started.json()["total"] == 3
    evaluation = finished(server, started.json()["id"])
    assert evaluation["status"] == "done", evaluation
    cases = get(server, f"/admin/evaluations/{evaluation['id']}/cases")["data"]
    ada = [n for n in range(TURNS) if USERS[n % len(USERS)] == "ada"]
    assert sorted(case_number(case["question"]) for case in cases) == ada[-3:]
    assert {case["user"] for case in cases} == {"ada"}

    later = start(
        server,
        name="after every turn",
        candidates=["cheap-a"],
        source={"agent": "gpt", "since": "2999-01-01T00:00:00Z"},
    )
    assert later.status_code == 202, later.text
    assert later.json()["total"] == 0


def test_an_agent_without_history_gives_no_cases(
    server: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    openai.OpenAI(base_url=f"{server.url}/v1", api_key="x", max_retries=0).chat.completions.create(
        model="forgetful", messages=[{"role": "user", "content": "Remember?"}], user="ada"
    )
    started = start(server, name="nothing", candidates=["cheap-a"], source={"agent": "forgetful"})
    assert started.status_code == 202, started.text
    assert started.json()["total"] == 0
    evaluation = finished(server, started.json()["id"])
    assert evaluation["status"] == "done"
    assert [entry["scores"] for entry in evaluation["summary"]] == [{}, {}]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"candidates": ["cheap-a"], "source": {"agent": "gpt"}}, "name"),
        ({"name": "x", "candidates": [], "source": {"agent": "gpt"}}, "candidates"),
        ({"name": "x", "candidates": ["cheap-a"] * 5, "source": {"agent": "gpt"}}, "candidates"),
        ({"name": "x", "candidates": ["nope"], "source": {"agent": "gpt"}}, "candidates[0]"),
        (
            {"name": "x", "candidates": ["cheap-a", "cheap-a"], "source": {"agent": "gpt"}},
            "candidates[1]",
        ),
        ({"name": "x", "candidates": ["cheap-a"], "source": {"agent": "nope"}}, "source.agent"),
        (
            {"name": "x", "candidates": ["cheap-a"], "source": {"experiment": "nope"}},
            "source.experiment",
        ),
        ({"name": "x", "candidates": ["cheap-a"], "source": {}}, "source"),
        (
            {"name": "x", "candidates": ["cheap-a"], "source": {"agent": "gpt", "limit": 0}},
            "source.limit",
        ),
        (
            {"name": "x", "candidates": ["cheap-a"], "source": {"agent": "gpt", "limit": 1001}},
            "source.limit",
        ),
        (
            {"name": "x", "candidates": ["cheap-a"], "source": {"agent": "gpt", "users": [" "]}},
            "source.users[0]",
        ),
        (
            {
                "name": "x",
                "candidates": ["cheap-a"],
                "source": {"agent": "gpt", "since": "yesterday"},
            },
            "source.since",
        ),
        (
            {
                "name": "x",
                "candidates": ["cheap-a"],
                "source": {
                    "agent": "gpt",
                    "since": "2026-02-01T00:00:00Z",
                    "until": "2026-01-01T00:00:00Z",
                },
            },
            "source.until",
        ),
        (
            {
                "name": "x",
                "candidates": ["cheap-a"],
                "source": {"agent": "gpt"},
                "judges": ["nope"],
            },
            "judges[0]",
        ),
        ({"name": "x", "candidates": ["cheap-b"], "source": {"agent": "cheap-a"}}, "judges"),
        ({"name": "x", "candidates": ["cheap-a"], "source": {"agent": "gpt"}, "limt": 5}, "limt"),
    ],
)
def test_a_body_that_does_not_validate_is_422_naming_the_field(
    server: GatewayServer, body: dict[str, Any], field: str
) -> None:
    before = get(server, "/admin/evaluations")["data"]

    response = start(server, **body)

    assert response.status_code == 422, response.text
    error = response.json()["error"]
    assert error["code"] == "invalid"
    assert any(problem.startswith(f"{field}: ") for problem in error["problems"]), error
    assert get(server, "/admin/evaluations")["data"] == before


def test_the_evaluate_command_prints_the_summary_table(
    server: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    script_the_replay(openai_fake)

    result = manage(
        "evaluate", "--candidates", "cheap-a,cheap-b", "--source", "gpt", "--limit", "4",
        env={"GATEWAY_CONFIG": str(server.config_path), "DATABASE_URL": server.database_url},
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert re.fullmatch(r"evaluation \d+: 4 cases", lines[0])
    assert lines[1].split() == [
        "agent", "grader.accuracy", "grader.helpfulness", "cost_usd", "latency_ms", "win/tie/loss"
    ]  # fmt: skip
    expected = expected_summary(list(range(TURNS - 4, TURNS)))  # the four newest turns
    rows = {line.split()[0]: line for line in lines[2:]}
    assert list(rows) == ["cheap-a", "cheap-b", "original"]
    for whose, figures in expected.items():
        means = [float(x) for x in re.findall(r"(\d+\.\d\d) \[", rows[whose])]
        assert means == [
            pytest.approx(figures["means"][f"grader.{c}"], abs=0.005) for c in CRITERIA
        ]
        assert f"{figures['cost']:.6f}" in rows[whose]
        tally = f"{figures['win']}/{figures['tie']}/{figures['loss']}"
        assert rows[whose].endswith(tally if whose != "original" else "-")
    listed = get(server, "/admin/evaluations")["data"][0]
    assert (listed["name"], listed["status"]) == ("evaluate gpt", "done")


@pytest.fixture
def page() -> Iterator[Page]:
    with chromium_page() as page:
        yield page


def test_the_page_starts_an_evaluation_shows_its_progress_then_its_table(
    page: Page, server: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    script_the_replay(openai_fake, delay=0.5)
    page.goto(f"{server.url}/admin/")
    page.get_by_role("navigation").get_by_role("link", name="Evaluations").click()
    form = page.locator("#new-evaluation")
    form.get_by_label("Name").fill("from the page")
    form.locator("select[name=source]").select_option("agent:gpt")
    form.get_by_label("Candidates").fill("cheap-a, cheap-b")
    form.get_by_label("Cases").fill("3")
    form.get_by_role("button", name="Start").click()

    expect(page).to_have_url(re.compile(r"/admin/evaluations/\d+$"))
    expect(page.locator("#progress")).to_contain_text("of 3 cases done")
    shot(page, "evaluation-running")
    summary = page.locator("#summary table")
    expect(summary).to_be_visible(timeout=20_000)
    expect(summary.get_by_role("row")).to_have_count(4)  # the header, two candidates, original
    expect(summary).to_contain_text("cheap-a")
    expect(page.locator("#summary svg rect.bar")).to_have_count(3)
    expect(page.locator("#cases tbody tr")).to_have_count(3)
    expect(page.locator("#cases")).to_contain_text(alpha(TURNS - 1))
    shot(page, "evaluation-done")
