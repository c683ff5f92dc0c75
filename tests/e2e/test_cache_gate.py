"""The semantic cache's gate through the real server, with the fakes' word-bag embedder
(word order is lost, so swapped roles have similarity 1.0): every near-miss above the
similarity misses, every paraphrase hits, ``gate: off`` serves the swapped roles again,
gated candidates are counted in /metrics, a semantic hit's request detail names the
question it matched, and ``cache_calibrate`` judges recorded questions near the
threshold."""

import json
import math
import re
import sqlite3
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from tests.browser import chromium_page, shot
from tests.e2e.test_management_commands import manage
from tests.fakes.base import FakeUpstream, Recorded, Reply, fake_vector
from tests.polling import wait_for
from tests.server import GatewayServer
from tests.upstreams import api_key_of, fake_base_url

JSON = {"Accept": "application/json"}
SIMILARITY = 0.8
CACHED_ANSWER = "The answer to the first question."
FRESH_ANSWER = "A fresh answer."


def config_text(upstreams: dict[str, FakeUpstream]) -> str:
    providers = "\n".join(
        f"  {kind}: {{api_key: {api_key_of(kind)}, base_url: '{fake_base_url(upstreams[kind])}', "
        "retries: {attempts: 0}}"
        for kind in ("openai", "anthropic")
    )
    semantic = f"mode: semantic, embedder: embed, similarity: {SIMILARITY}"
    return f"""\
providers:
{providers}
pricing:
  "anthropic/judge-model": {{input: 1.0, output: 2.0}}
embedders:
  - {{name: embed, provider: openai, model: embedding-1}}
judges:
  - {{name: referee, provider: anthropic, model: judge-model, sampling_rate: 0, rubrics: {{accuracy: Is it right?}}}}
agents:
  - {{name: gated, provider: openai, model: gpt-gated, history: false, cache: {{{semantic}}}}}
  - {{name: counted, provider: openai, model: gpt-counted, history: false, cache: {{{semantic}}}}}
  - {{name: ungated, provider: openai, model: gpt-ungated, history: false, cache: {{{semantic}, gate: off}}}}
  - {{name: calibrated, provider: openai, model: gpt-calibrated, judges: [referee], cache: {{{semantic}}}}}
"""


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    gateway = GatewayServer(tmp_path_factory.mktemp("cache-gate"), config_text(upstreams)).start()
    yield gateway
    gateway.stop()


def ask(server: GatewayServer, agent: str, question: str, user: str) -> Any:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="any", max_retries=0)
    return client.chat.completions.with_raw_response.create(
        model=agent, messages=[{"role": "user", "content": question}], safety_identifier=user
    )


def answered(raw: Any) -> tuple[str, str]:
    """(the answer, X-Gateway-Cache)."""
    return raw.parse().choices[0].message.content, raw.headers["x-gateway-cache"]


def similarity(first: str, second: str) -> float:
    """The cosine of the fake embedder's vectors (the embedder the agents use)."""
    return math.fsum(a * b for a, b in zip(fake_vector(first), fake_vector(second), strict=True))


def ask_twice(
    server: GatewayServer, openai_fake: FakeUpstream, agent: str, cached: str, asked: str
) -> tuple[str, str]:
    """The second question's (answer, X-Gateway-Cache), after the first's answer was kept."""
    openai_fake.script(Reply.of_text(CACHED_ANSWER), Reply.of_text(FRESH_ANSWER))
    user = f"user-{uuid.uuid4().hex[:12]}"
    assert answered(ask(server, agent, cached, user)) == (CACHED_ANSWER, "miss")
    return answered(ask(server, agent, asked, user))


NEAR_MISSES = {
    "negation": ("Is this cocktail good with alcohol", "Is this cocktail good without alcohol"),
    "not": ("Should I water the cactus in winter", "Should I not water the cactus in winter"),
    "swapped roles": ("Transfer $100 from alice to bob", "Transfer $100 from bob to alice"),
    "changed number": (
        "Transfer $100 from the savings account to checking",
        "Transfer $250 from the savings account to checking",
    ),
    "changed name": (
        "Book a table at the Italian place for Alice tonight",
        "Book a table at the Italian place for Carol tonight",
    ),
    "changed identifier": (
        "Send the quarterly report to ops@example.com today",
        "Send the quarterly report to legal@example.com today",
    ),
    "quoted strings": (
        "Replace 'staging' with 'production' in the deploy script",
        "Replace 'production' with 'staging' in the deploy script",
    ),
}
PARAPHRASES = {
    "politeness": (
        "Tell me the capital city of France",
        "Please tell me the capital city of France, thanks",
    ),
    "case and punctuation": ("How do I reset my password?", "HOW DO I RESET MY PASSWORD"),
    "a name starting the sentence": (
        "Can Alice borrow Bob's car tomorrow",
        "Alice, can she borrow Bob's car tomorrow?",
    ),
    "number format": (
        "Is $1,000.00 enough to open the account",
        "Is $1000 enough to open the account",
    ),
    "a block moved to the front": (
        "Book a table for 4 at Luigi's on Friday at 8pm",
        "On Friday at 8pm, book a table for 4 at Luigi's",
    ),
    "article dropped": (
        "What is the boiling point of water at sea level",
        "What is boiling point of water at sea level",
    ),
}


@pytest.mark.parametrize("kind", list(NEAR_MISSES))
def test_a_near_miss_above_the_similarity_misses(
    server: GatewayServer, openai_fake: FakeUpstream, kind: str
) -> None:
    cached, asked = NEAR_MISSES[kind]
    assert similarity(cached, asked) >= SIMILARITY  # plain similarity would serve it

    assert ask_twice(server, openai_fake, "gated", cached, asked) == (FRESH_ANSWER, "miss")


@pytest.mark.parametrize("kind", list(PARAPHRASES))
def test_a_paraphrase_hits(server: GatewayServer, openai_fake: FakeUpstream, kind: str) -> None:
    cached, asked = PARAPHRASES[kind]

    assert ask_twice(server, openai_fake, "gated", cached, asked) == (CACHED_ANSWER, "hit")


def test_gate_off_serves_the_swapped_roles_again(
    server: GatewayServer, openai_fake: FakeUpstream
) -> None:
    cached, asked = NEAR_MISSES["swapped roles"]

    assert ask_twice(server, openai_fake, "ungated", cached, asked) == (CACHED_ANSWER, "hit")


def test_a_gated_candidate_is_counted_in_the_metrics(
    server: GatewayServer, openai_fake: FakeUpstream
) -> None:
    before = server.metric("gateway_cache_gated_total", agent="counted")
    cached, asked = NEAR_MISSES["swapped roles"]

    ask_twice(server, openai_fake, "counted", cached, asked)
    after_gated = server.metric("gateway_cache_gated_total", agent="counted")
    ask_twice(server, openai_fake, "counted", *PARAPHRASES["politeness"])

    assert after_gated == before + 1
    assert server.metric("gateway_cache_gated_total", agent="counted") == after_gated


def test_a_semantic_hits_request_detail_names_the_question_it_matched(
    server: GatewayServer, openai_fake: FakeUpstream
) -> None:
    openai_fake.script(Reply.of_text(CACHED_ANSWER))
    user = f"user-{uuid.uuid4().hex[:12]}"
    cached, asked = PARAPHRASES["politeness"]
    ask(server, "gated", cached, user)
    again_id = ask(server, "gated", cached + "?", user).headers["x-request-id"]
    hit_id = ask(server, "gated", asked, user).headers["x-request-id"]

    def detail(request_id: str) -> dict[str, Any] | None:
        response = httpx.get(f"{server.url}/admin/requests/{request_id}", headers=JSON)
        return response.json() if response.status_code == 200 else None

    hit = wait_for(lambda: detail(hit_id), "the hit's record")
    again = wait_for(lambda: detail(again_id), "the other hit's record")

    assert hit["cache"]["result"] == "hit"
    assert hit["cache"]["matched_question"] == cached
    assert isinstance(hit["cache"]["age_s"], int)
    # "cached?" is another text: a semantic hit too, of the same cached question
    assert again["cache"]["matched_question"] == cached
    assert asked not in server.log()  # the questions stay out of the log lines
    with chromium_page() as page:
        page.goto(f"{server.url}/admin/requests/{hit_id}")
        row = page.locator("tr", has_text="Cache")
        assert row.locator(".matched-question").inner_text() == cached
        assert row.inner_text().startswith("Cache\thit")
        shot(page, "request-cache-hit")


# ---- cache_calibrate --------------------------------------------------------------------

OPENS, OPENS_AT_WHAT_HOUR, CLOSES, PASSPORT = RECORDED = [
    "What time does the museum open on Sunday",
    "What hour does the museum open on Sunday",
    "What time does the museum close on Sunday evening",
    "How do I renew my passport online",
]


def verdict(score: int) -> Reply:
    return Reply.of_text(json.dumps({"answers": {"score": score, "reasoning": "Judged."}}))


def test_cache_calibrate_judges_recorded_questions_near_the_threshold(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    openai_fake, judge = fakes["openai"], fakes["anthropic"]
    for index, question in enumerate(RECORDED):
        openai_fake.script(Reply.of_text(f"Recorded answer {index}."))
        ask(server, "calibrated", question, f"calibrating-{index}")
    # Within 0.1 of the threshold: the two opening questions (0.875), and the closing one
    # with each (0.825 and 0.707); the judge says an earlier answer answers the other
    # opening question, not the closing one (the live judge samples nothing).
    assert [round(similarity(OPENS, other), 3) for other in (OPENS_AT_WHAT_HOUR, CLOSES)] == [
        0.875,
        0.825,
    ]
    assert round(similarity(OPENS_AT_WHAT_HOUR, CLOSES), 3) == 0.707
    assert similarity(OPENS, PASSPORT) < 0.7

    def judged(recorded: Recorded) -> str:
        return json.dumps(recorded.body) if "Recorded answer" in json.dumps(recorded.body) else ""

    judge.answer_when(lambda recorded: CLOSES in judged(recorded), verdict(2))
    judge.answer_when(lambda recorded: bool(judged(recorded)), verdict(9))

    result = manage(
        "cache_calibrate", "calibrated",
        env={"GATEWAY_CONFIG": str(server.config_path), "DATABASE_URL": server.database_url},
    )  # fmt: skip

    assert result.returncode == 0, result.stderr
    assert len([recorded for recorded in judge.requests if judged(recorded)]) == 3
    rows = {
        match[1]: (match[2], match[3])
        for match in re.finditer(r"^(\d\.\d\d)\s+([\d.]+%)\s+([\d.]+%)", result.stdout, re.M)
    }
    expected = {"0.70": ("100.0%", "66.7%")}
    expected |= {f"{t / 100:.2f}": ("66.7%", "50.0%") for t in range(71, 83)}
    expected |= {f"{t / 100:.2f}": ("33.3%", "0.0%") for t in range(83, 88)}
    expected |= {f"{t / 100:.2f}": ("0.0%", "0.0%") for t in range(88, 101)}
    assert rows == expected
    assert result.stdout.rstrip().endswith("suggested similarity: 0.83")
    with sqlite3.connect(server.workdir / "gateway.sqlite3") as database:
        billed = database.execute(
            "SELECT kind, user_id, agent, provider FROM inference_ledgerentry "
            "WHERE completion_id LIKE 'calibrate-%'"
        ).fetchall()
    assert {(kind, user, agent) for kind, user, agent, _ in billed} == {
        ("evaluation", "", "calibrated")
    }
    assert len([row for row in billed if row[3] == "anthropic"]) == 3
