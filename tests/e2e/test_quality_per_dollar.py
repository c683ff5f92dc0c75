"""Routing on quality per dollar through the real server: two bandits over the same two
variants, `dear` (its judge scores 9, it costs $0.010 a request) and `cheap` (8, $0.001),
one with a cost weight of 200 points per dollar, one without. Real requests, real judge
runs (the judge's verdicts scripted by the reply it reads), real prices."""

import json
import uuid
from collections import Counter
from collections.abc import Callable, Iterator

import httpx
import openai
import pytest

from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.server import GatewayServer
from tests.upstreams import api_key_of, fake_base_url

REQUESTS = 60
MIN_SAMPLES = 4
# $ per million tokens making one request (11 prompt + 7 completion tokens) cost $0.010
# and $0.001.
DEAR, CHEAP = 10_000 / 18, 1_000 / 18


def config_text(upstreams: dict[str, FakeUpstream]) -> str:
    openai_url, anthropic_url = (fake_base_url(upstreams[k]) for k in ("openai", "anthropic"))
    bandit = (
        f"strategy: bandit, epsilon: 0.1, min_samples: {MIN_SAMPLES}, "
        "variants: [{agent: dear}, {agent: cheap}]"
    )
    return f"""\
providers:
  openai: {{api_key: {api_key_of("openai")}, base_url: '{openai_url}', retries: {{attempts: 0}}}}
  anthropic: {{api_key: {api_key_of("anthropic")}, base_url: '{anthropic_url}', retries: {{attempts: 0}}}}
pricing:
  "openai/dear-model": {{input: {DEAR}, output: {DEAR}}}
  "openai/cheap-model": {{input: {CHEAP}, output: {CHEAP}}}
judges:
  - {{name: grader, provider: anthropic, model: grader-model, rubrics: {{quality: Is it good?}}}}
agents:
  - {{name: dear, provider: openai, model: dear-model, history: false, judges: [grader]}}
  - {{name: cheap, provider: openai, model: cheap-model, history: false, judges: [grader]}}
experiments:
  - {{name: per-dollar, {bandit}, objective: {{metric: grader.quality, cost_weight: 200}}}}
  - {{name: per-point, {bandit}, metric: grader.quality}}
"""


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    gateway = GatewayServer(tmp_path_factory.mktemp("per-dollar"), config_text(upstreams))
    yield gateway.start()
    gateway.stop()


def scripted(fakes: dict[str, FakeUpstream]) -> None:
    """Each variant says who it is; the judge gives the dear one 9 and the cheap one 8."""

    def model_is(name: str) -> Callable[[Recorded], bool]:
        return lambda recorded: recorded.body.get("model") == name

    def grades(word: str) -> Callable[[Recorded], bool]:
        return lambda recorded: word in json.dumps(recorded.body)

    for name, word in (("dear-model", "DEAR"), ("cheap-model", "CHEAP")):
        fakes["openai"].answer_when(model_is(name), Reply.of_text(f"The {word} answer."))
    for word, score in (("DEAR", 9), ("CHEAP", 8)):
        verdict = {"quality": {"score": score, "reasoning": "As scripted."}}
        fakes["anthropic"].answer_when(grades(word), Reply.of_text(json.dumps(verdict)))


def picks(server: GatewayServer, experiment: str) -> list[str]:
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="any", max_retries=0)
    chosen = []
    for index in range(REQUESTS):
        raw = client.chat.completions.with_raw_response.create(
            model=experiment,
            messages=[{"role": "user", "content": f"Question {index}?"}],
            safety_identifier=f"user-{uuid.uuid4().hex[:8]}",
        )
        chosen.append(raw.headers["x-gateway-upstream"].split("/")[1].removesuffix("-model"))
    return chosen


@pytest.mark.parametrize(("experiment", "winner"), [("per-dollar", "cheap"), ("per-point", "dear")])
def test_a_bandit_settles_on_the_better_reward(
    experiment: str, winner: str, server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    scripted(fakes)

    chosen = picks(server, experiment)

    late = Counter(chosen[2 * MIN_SAMPLES + 4 :])  # after both were tried min_samples times
    loser = "dear" if winner == "cheap" else "cheap"
    # Exploration picks either at random one time in ten: the loser gets about 5 %. The
    # bound leaves room for judges still running when the next request is routed.
    assert late[loser] <= 0.2 * sum(late.values()), (chosen, late)
    assert late[winner] >= 0.8 * sum(late.values()), (chosen, late)


def test_the_stats_page_shows_score_cost_and_reward_per_variant(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    scripted(fakes)
    picks(server, "per-dollar")

    stats = httpx.get(
        f"{server.url}/admin/experiments/per-dollar/stats",
        headers={"Accept": "application/json"},
        timeout=10,
    ).json()

    assert (stats["metric"], stats["cost_weight"]) == ("grader.quality", 200)
    by_variant = {row["agent"]: row for row in stats["variants"]}
    assert by_variant["dear"]["mean_cost_usd"] == pytest.approx(0.010, rel=1e-3)
    assert by_variant["cheap"]["mean_cost_usd"] == pytest.approx(0.001, rel=1e-3)
    assert by_variant["dear"]["mean_score"] == 9.0 and by_variant["cheap"]["mean_score"] == 8.0
    assert by_variant["dear"]["mean_reward"] == pytest.approx(7.0, abs=0.01)
    assert by_variant["cheap"]["mean_reward"] == pytest.approx(7.8, abs=0.01)
