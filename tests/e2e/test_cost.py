"""The cost of every call, where users look: ``usage.cost``, ``X-Gateway-Cost-Usd``,
``/metrics`` and the admin, from genai-prices' table or the config's ``pricing:``.

Expected figures are computed with genai-prices' own ``calc_price`` from the usage the
fake upstream reported, not with the gateway's code.
"""

import json
import uuid
from collections.abc import Iterator
from decimal import Decimal
from typing import Any

import anthropic
import httpx
import openai
import pytest
from genai_prices import Usage as PricedUsage
from genai_prices import calc_price

from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.polling import wait_for
from tests.server import GatewayServer
from tests.upstreams import api_key_of, fake_base_url

TABLE_MODELS = {
    "openai": "gpt-4.1-mini",
    "anthropic": "claude-haiku-4-5",
    "gemini": "gemini-2.5-flash",
}
JSON = {"Accept": "application/json"}
TABLE_PROVIDERS = {"openai": "openai", "anthropic": "anthropic", "gemini": "google"}


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    lines = ["providers:"]
    for kind in TABLE_MODELS:
        url = fake_base_url(upstreams[kind])
        lines.append(f"  {kind}: {{api_key: {api_key_of(kind)}, base_url: '{url}'}}")
    url = fake_base_url(upstreams["openai"])
    lines += [
        f"  self-hosted: {{kind: openai, base_url: '{url}'}}",
        "agents:",
        *(f"  - {{name: {kind}-priced, provider: {kind}, model: {model}}}" for kind, model in TABLE_MODELS.items()),
        "  - {name: finetune, provider: self-hosted, model: my-finetune}",
        "  - {name: unpriced, provider: self-hosted, model: llama-local}",
        "  - {name: judged, provider: self-hosted, model: my-finetune, judges: [pricey]}",
        "judges:",
        "  - {name: pricey, provider: self-hosted, model: my-finetune, rubrics: {accuracy: Right?}}",
        "pricing:",
        '  "self-hosted/my-finetune": {input: 3.0, output: 12.0, cache_read: 1.5}',
    ]  # fmt: skip
    gateway = GatewayServer(tmp_path_factory.mktemp("cost"), "\n".join(lines) + "\n").start()
    yield gateway
    gateway.stop()


@pytest.fixture
def client(server: GatewayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)


def ask(client: openai.OpenAI, model: str, **options: Any) -> Any:
    return client.chat.completions.with_raw_response.create(
        model=model,
        messages=[{"role": "user", "content": "What does it cost?"}],
        safety_identifier="cost-user",
        metadata={"history": "off"},
        **options,
    )


def table_cost(kind: str, reply: Reply) -> float:
    usage = PricedUsage(
        input_tokens=reply.prompt_tokens,
        cache_read_tokens=reply.cached_tokens,
        cache_write_tokens=reply.cache_write_tokens,
        output_tokens=reply.completion_tokens,
    )
    found = calc_price(usage, TABLE_MODELS[kind], provider_id=TABLE_PROVIDERS[kind])
    return float(found.total_price.quantize(Decimal("0.000001")))


@pytest.mark.parametrize("kind", list(TABLE_MODELS))
def test_cost_is_the_price_tables_figure_for_the_reported_usage(
    client: openai.OpenAI, fakes: dict[str, FakeUpstream], kind: str
) -> None:
    writes = 3000 if kind == "anthropic" else 0
    reply = Reply.of_text(
        "Priced.",
        prompt_tokens=12000,
        completion_tokens=900,
        cached_tokens=4000,
        cache_write_tokens=writes,
    )
    fakes[kind].script(reply)

    raw = ask(client, f"{kind}-priced")

    expected = table_cost(kind, reply)
    assert expected > 0
    assert raw.parse().usage.model_extra["cost"] == pytest.approx(expected, abs=1e-6)
    assert float(raw.headers["x-gateway-cost-usd"]) == pytest.approx(expected, abs=1e-6)


def test_a_pricing_override_is_used_exactly(
    client: openai.OpenAI, fakes: dict[str, FakeUpstream]
) -> None:
    fakes["openai"].script(
        Reply.of_text(
            "Mine.", prompt_tokens=1_000_000, completion_tokens=100_000, cached_tokens=200_000
        )
    )

    raw = ask(client, "finetune")

    # 800k uncached x $3 + 200k cached x $1.5 + 100k output x $12, per million.
    assert raw.parse().usage.model_extra["cost"] == pytest.approx(2.4 + 0.3 + 1.2)
    assert raw.headers["x-gateway-cost-usd"] == "3.900000"


def test_a_model_without_a_price_has_no_cost(
    client: openai.OpenAI, fakes: dict[str, FakeUpstream], server: GatewayServer
) -> None:
    fakes["openai"].script(Reply.of_text("Free?"))

    raw = ask(client, "unpriced")

    assert "cost" not in (raw.parse().usage.model_extra or {})
    assert "x-gateway-cost-usd" not in raw.headers
    agents = httpx.get(f"{server.url}/admin/agents", headers={"Accept": "text/html"}).text
    assert "no price for self-hosted/llama-local" in agents


def test_a_stream_reports_its_cost_in_the_usage_chunk(
    client: openai.OpenAI, fakes: dict[str, FakeUpstream]
) -> None:
    reply = Reply.of_text("Streamed and priced.", prompt_tokens=5000, completion_tokens=500)
    fakes["gemini"].script(reply)

    stream = client.chat.completions.create(
        model="gemini-priced",
        messages=[{"role": "user", "content": "Stream it."}],
        safety_identifier="cost-user",
        metadata={"history": "off"},
        stream=True,
        stream_options={"include_usage": True},
    )
    usage = [chunk.usage for chunk in stream if chunk.usage is not None][-1]

    assert usage.model_extra["cost"] == pytest.approx(table_cost("gemini", reply), abs=1e-6)


def test_responses_report_the_cost_too(
    client: openai.OpenAI, fakes: dict[str, FakeUpstream]
) -> None:
    reply = Reply.of_text("Responses priced.", prompt_tokens=3000, completion_tokens=300)
    fakes["anthropic"].script(reply)

    response = client.responses.create(
        model="anthropic-priced",
        input="Hi",
        safety_identifier="cost-user",
        metadata={"history": "off"},
    )

    assert response.usage is not None
    assert response.usage.model_extra["cost"] == pytest.approx(
        table_cost("anthropic", reply), abs=1e-6
    )


@pytest.mark.parametrize("stream", [False, True])
def test_messages_report_the_cost_too(
    server: GatewayServer, fakes: dict[str, FakeUpstream], stream: bool
) -> None:
    reply = Reply.of_text("Messages priced.", prompt_tokens=3000, completion_tokens=300)
    fakes["anthropic"].script(reply)
    claude = anthropic.Anthropic(base_url=server.url, api_key="x", max_retries=0)
    request: dict[str, Any] = {
        "model": "anthropic-priced",
        "max_tokens": 400,
        "messages": [{"role": "user", "content": "Hi"}],
        "metadata": {"user_id": "cost-user", "history": "off"},
    }

    if stream:  # the cost comes with the final usage, in message_delta
        with claude.messages.stream(**request) as events:
            (delta,) = [event for event in events if event.type == "message_delta"]
        extra = delta.usage.model_extra
    else:
        extra = claude.messages.create(**request).usage.model_extra

    assert extra is not None
    assert extra["cost"] == pytest.approx(table_cost("anthropic", reply), abs=1e-6)


def test_metrics_count_the_cost(
    client: openai.OpenAI, fakes: dict[str, FakeUpstream], server: GatewayServer
) -> None:
    labels = {"agent": "finetune", "provider": "self-hosted", "model": "my-finetune"}
    before = server.metric("gateway_cost_usd_total", **labels)
    fakes["openai"].script(Reply.of_text("Counted.", prompt_tokens=1_000_000, completion_tokens=0))

    ask(client, "finetune")

    assert server.metric("gateway_cost_usd_total", **labels) == pytest.approx(before + 3.0)


def test_a_judges_cost_is_charged_to_the_agent_not_the_user(
    client: openai.OpenAI, fakes: dict[str, FakeUpstream], server: GatewayServer
) -> None:
    def judge_call(recorded: Recorded) -> bool:
        return "impartial judge" in json.dumps(recorded.body)

    verdict = json.dumps({"accuracy": {"score": 8, "reasoning": "Fine."}})
    fakes["openai"].answer_when(
        judge_call, Reply.of_text(verdict, prompt_tokens=1_000_000, completion_tokens=0)
    )
    fakes["openai"].script(Reply.of_text("Judged.", prompt_tokens=0, completion_tokens=100_000))
    user = f"judged-{uuid.uuid4().hex[:8]}"

    raw = client.chat.completions.with_raw_response.create(
        model="judged",
        messages=[{"role": "user", "content": "Judge me."}],
        safety_identifier=user,
        metadata={"history": "off"},
    )
    assert raw.parse().usage.model_extra["cost"] == pytest.approx(1.2)  # 100k output x $12

    def agent_spend() -> float:
        rows = httpx.get(
            f"{server.url}/admin/spend", params={"group_by": "agent"}, headers=JSON, timeout=10
        ).json()["data"]
        return next((row["cost_usd"] for row in rows if row["group"] == "judged"), 0.0)

    wait_for(lambda: agent_spend() >= 4.2, "the judge's $3 to be charged to the agent")
    usage = httpx.get(f"{server.url}/admin/usage", params={"user": user}, headers=JSON).json()
    assert usage["cost_usd"]["day"] == pytest.approx(1.2)  # the user pays for the turn only
