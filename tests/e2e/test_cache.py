"""The response cache through the real server: a second identical call is answered
without the upstream, on every dialect and provider kind, whole or streamed; answers are
kept per user (or key) and never cross to another; the key follows the agent's preamble
and the user's memories; the client can skip it; semantic lookups; expiry, purge,
erasure and judges forget; a hit spends nothing; processes share entries."""

import json
import re
import time
import uuid
from collections.abc import Iterator, Mapping
from typing import Any

import anthropic
import httpx
import openai
import pytest
from google import genai
from google.genai import types as genai_types

from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.polling import wait_for
from tests.server import GatewayServer
from tests.upstreams import api_key_of, fake_base_url

JSON = {"Accept": "application/json"}
LONG_ANSWER = "Paris is the capital of France, and it has been for a very long time."
VERDICT_BAD = {"accuracy": {"score": 2, "reasoning": "Wrong."}}
VERDICT_GOOD = {"accuracy": {"score": 9, "reasoning": "Right."}}


def config_text(upstreams: dict[str, FakeUpstream], api_keys: bool = False) -> str:
    providers = "\n".join(
        f"  {kind}: {{api_key: {api_key_of(kind)}, base_url: '{fake_base_url(upstreams[kind])}', "
        "retries: {attempts: 0}}"
        for kind in ("openai", "anthropic", "gemini")
    )
    auth = "auth: {proxy: {api_keys: true}}\n" if api_keys else ""
    return f"""\
{auth}providers:
{providers}
pricing:
  "openai/gpt-faq": {{input: 1.0, output: 2.0}}
embedders:
  - {{name: embed, provider: openai, model: embedding-1}}
judges:
  - {{name: strict, provider: anthropic, model: judge-model, rubrics: {{accuracy: Is it right?}}}}
agents:
  - {{name: faq, provider: openai, model: gpt-faq, preamble: You answer FAQs., history: false, cache: {{mode: exact}}}}
  - {{name: claude-faq, provider: anthropic, model: claude-faq, history: false, cache: {{mode: exact}}}}
  - {{name: gemini-faq, provider: gemini, model: gemini-faq, history: false, cache: {{mode: exact}}}}
  - {{name: by-key, provider: openai, model: gpt-by-key, history: false, cache: {{mode: exact, scope: key}}}}
  - {{name: editable, provider: openai, model: gpt-editable, preamble: First words., history: false, cache: {{mode: exact}}}}
  - {{name: paraphrases, provider: openai, model: gpt-semantic, history: false, cache: {{mode: semantic, embedder: embed, similarity: 0.8}}}}
  - {{name: fleeting, provider: openai, model: gpt-fleeting, history: false, cache: {{mode: exact, ttl: 1}}}}
  - {{name: judged, provider: openai, model: gpt-judged, history: false, judges: [strict], cache: {{mode: exact, min_score: 5}}}}
  - {{name: remembering, provider: openai, model: gpt-remembering, history: false, memory: {{embedder: embed}}, cache: {{mode: exact}}}}
  - {{name: uncached, provider: openai, model: gpt-uncached, history: false}}
"""


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    gateway = GatewayServer(tmp_path_factory.mktemp("cache"), config_text(upstreams)).start()
    yield gateway
    gateway.stop()


def client_of(server: GatewayServer, **options: Any) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="any", max_retries=0, **options)


def ask(
    server: GatewayServer, agent: str, question: str, user: str, **options: Any
) -> tuple[str, Mapping[str, str], Any]:
    """(the answer, the response's headers, its usage) of one chat completion."""
    raw = client_of(server).chat.completions.with_raw_response.create(
        model=agent,
        messages=[{"role": "user", "content": question}],
        safety_identifier=user,
        **options,
    )
    completion = raw.parse()
    return completion.choices[0].message.content or "", raw.headers, completion.usage


def calls_for(fake: FakeUpstream, model: str) -> list[Recorded]:
    return [recorded for recorded in fake.requests if recorded.body.get("model") == model]


def test_a_second_identical_chat_completion_makes_no_upstream_call(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_text(LONG_ANSWER))

    first, first_headers, first_usage = ask(server, "faq", "Capital of France?", user_id)
    second, second_headers, second_usage = ask(server, "faq", "Capital of France?", user_id)

    assert first == second == LONG_ANSWER
    assert len(calls_for(openai_fake, "gpt-faq")) == 1
    assert first_headers["x-gateway-cache"] == "miss"
    assert "x-gateway-cache-age" not in first_headers
    assert second_headers["x-gateway-cache"] == "hit"
    assert int(second_headers["x-gateway-cache-age"]) >= 0
    assert (second_usage.prompt_tokens, second_usage.completion_tokens) == (
        first_usage.prompt_tokens,
        first_usage.completion_tokens,
    )
    assert second_headers["x-gateway-cost-usd"] == "0.000000"
    assert float(first_headers["x-gateway-cost-usd"]) > 0


def test_a_second_identical_message_is_answered_from_the_cache_on_anthropic(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes["anthropic"].script(Reply.of_text(LONG_ANSWER))
    claude = anthropic.Anthropic(base_url=server.url, api_key="any", max_retries=0)

    def message() -> Any:
        return claude.messages.with_raw_response.create(
            model="claude-faq",
            max_tokens=200,
            messages=[{"role": "user", "content": "Capital of France?"}],
            extra_headers={"X-User-Id": user_id},
        )

    first, second = message(), message()

    assert first.parse().content[0].text == second.parse().content[0].text == LONG_ANSWER
    assert (first.headers["x-gateway-cache"], second.headers["x-gateway-cache"]) == (
        "miss",
        "hit",
    )
    assert len(calls_for(fakes["anthropic"], "claude-faq")) == 1
    assert second.parse().usage.output_tokens == first.parse().usage.output_tokens


def test_a_streamed_call_shares_the_entry_and_a_hit_streams(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    """Responses and Messages streams over one entry: the first stream stores it, a
    whole answer and another stream are hits, the stream in several pieces."""
    fakes["anthropic"].script(Reply.of_chunks("Paris is the capital ", "of France, for long."))
    client = client_of(server)

    def responses_stream() -> tuple[list[str], Mapping[str, str]]:
        with client.responses.with_streaming_response.create(
            model="claude-faq", input="Which city?", stream=True, safety_identifier=user_id
        ) as raw:
            deltas = [
                event.delta for event in raw.parse() if event.type == "response.output_text.delta"
            ]
            return deltas, raw.headers

    streamed, streamed_headers = responses_stream()
    whole = client.responses.with_raw_response.create(
        model="claude-faq", input="Which city?", safety_identifier=user_id
    )
    again, again_headers = responses_stream()

    assert "".join(streamed) == whole.parse().output_text == "".join(again)
    assert streamed_headers["x-gateway-cache"] == "miss"
    assert whole.headers["x-gateway-cache"] == again_headers["x-gateway-cache"] == "hit"
    assert len(again) > 1
    assert len(calls_for(fakes["anthropic"], "claude-faq")) == 1


def test_the_gemini_api_gets_hits_too(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes["gemini"].script(Reply.of_text(LONG_ANSWER))
    options = genai_types.HttpOptions(
        base_url=server.url, api_version="v1beta", headers={"X-User-Id": user_id}
    )
    client = genai.Client(api_key="any", http_options=options)

    first = client.models.generate_content(model="gemini-faq", contents="Capital of France?")
    second = client.models.generate_content(model="gemini-faq", contents="Capital of France?")

    assert first.text == second.text == LONG_ANSWER
    assert second.sdk_http_response is not None and second.sdk_http_response.headers is not None
    assert second.sdk_http_response.headers["x-gateway-cache"] == "hit"
    assert len(fakes["gemini"].requests) == 1


def test_answers_are_kept_per_user(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    other = f"{user_id}-other"

    ask(server, "faq", "Opening hours?", user_id)
    _, headers, _ = ask(server, "faq", "Opening hours?", other)
    _, again, _ = ask(server, "faq", "Opening hours?", user_id)

    assert headers["x-gateway-cache"] == "miss"
    assert again["x-gateway-cache"] == "hit"
    assert len(calls_for(openai_fake, "gpt-faq")) == 2


@pytest.fixture(scope="module")
def keyed(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    text = config_text(upstreams, api_keys=True)
    gateway = GatewayServer(tmp_path_factory.mktemp("cache-keys"), text).start()
    yield gateway
    gateway.stop()


def mint(server: GatewayServer, user: str) -> str:
    response = httpx.post(
        f"{server.url}/admin/keys", json={"name": "cache test", "user": user}, timeout=10
    )
    assert response.status_code == 201, response.text
    key: str = response.json()["key"]
    return key


def test_scope_key_keeps_answers_per_key(
    keyed: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    """Two keys of one user: each pays for its own answer, and gets its own back."""
    first_key, second_key = mint(keyed, user_id), mint(keyed, user_id)

    def with_key(key: str) -> str:
        raw = openai.OpenAI(
            base_url=f"{keyed.url}/v1", api_key=key, max_retries=0
        ).chat.completions.with_raw_response.create(
            model="by-key", messages=[{"role": "user", "content": "Refund policy?"}]
        )
        return raw.headers["x-gateway-cache"]

    assert [with_key(first_key), with_key(second_key), with_key(first_key)] == [
        "miss",
        "miss",
        "hit",
    ]
    assert len(calls_for(openai_fake, "gpt-by-key")) == 2


def test_a_changed_preamble_misses(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    ask(server, "editable", "Hello?", user_id)
    assert ask(server, "editable", "Hello?", user_id)[1]["x-gateway-cache"] == "hit"
    agent = httpx.get(f"{server.url}/admin/agents/editable", headers=JSON, timeout=10).json()
    changed = httpx.put(
        f"{server.url}/admin/agents/editable",
        json={**agent, "preamble": "Other words."},
        timeout=10,
    )
    assert changed.status_code == 200, changed.text

    _, headers, _ = ask(server, "editable", "Hello?", user_id)

    assert headers["x-gateway-cache"] == "miss"
    assert "Other words." in openai_fake.last.body["messages"][0]["content"]


def test_a_new_memory_of_the_user_misses(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    ask(server, "remembering", "What should I eat?", user_id)
    assert ask(server, "remembering", "What should I eat?", user_id)[1]["x-gateway-cache"] == "hit"
    added = httpx.post(
        f"{server.url}/admin/memories",
        json={"user": user_id, "agent": "remembering", "text": "Is vegetarian."},
        timeout=30,
    )
    assert added.status_code == 201, added.text

    _, headers, _ = ask(server, "remembering", "What should I eat?", user_id)

    assert headers["x-gateway-cache"] == "miss"
    assert "Is vegetarian." in openai_fake.last.body["messages"][0]["content"]


def test_no_store_and_metadata_off_neither_read_nor_write(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    no_store = {"extra_headers": {"Cache-Control": "no-store"}}

    _, bypassed, _ = ask(server, "faq", "Parking?", user_id, **no_store)
    _, stored, _ = ask(server, "faq", "Parking?", user_id)
    _, off, _ = ask(server, "faq", "Parking?", user_id, metadata={"cache": "off"})
    _, skipped, _ = ask(server, "faq", "Parking?", user_id, **no_store)
    _, hit, _ = ask(server, "faq", "Parking?", user_id)

    assert [h["x-gateway-cache"] for h in (bypassed, stored, off, skipped, hit)] == [
        "bypass",
        "miss",  # nothing was kept by the bypassed request
        "bypass",
        "bypass",
        "hit",
    ]
    assert len(calls_for(openai_fake, "gpt-faq")) == 4


def test_no_cache_skips_the_lookup_and_keeps_the_fresh_answer(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_text("Old answer."), Reply.of_text("Fresh answer."))
    ask(server, "faq", "Weather?", user_id)

    fresh, headers, _ = ask(
        server, "faq", "Weather?", user_id, extra_headers={"Cache-Control": "no-cache"}
    )
    again, _, _ = ask(server, "faq", "Weather?", user_id)

    assert (fresh, headers["x-gateway-cache"]) == ("Fresh answer.", "miss")
    assert again == "Fresh answer."
    assert len(calls_for(openai_fake, "gpt-faq")) == 2


def test_a_paraphrase_hits_a_semantic_cache_and_another_question_misses(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_text(LONG_ANSWER), Reply.of_text("Flour and water."))

    ask(server, "paraphrases", "Tell me the capital city of France", user_id)
    paraphrase, hit, _ = ask(
        server, "paraphrases", "Please tell me the capital city of France", user_id
    )
    other, miss, _ = ask(server, "paraphrases", "How do I bake sourdough bread?", user_id)

    assert (paraphrase, hit["x-gateway-cache"]) == (LONG_ANSWER, "hit")
    assert (other, miss["x-gateway-cache"]) == ("Flour and water.", "miss")
    assert len(calls_for(openai_fake, "gpt-semantic")) == 2
    assert len([r for r in openai_fake.requests if r.path.endswith("/embeddings")]) == 3


def test_an_answer_expires_after_its_ttl(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    ask(server, "fleeting", "Now?", user_id)
    assert ask(server, "fleeting", "Now?", user_id)[1]["x-gateway-cache"] == "hit"

    time.sleep(1.2)  # the agent's ttl is one second

    assert ask(server, "fleeting", "Now?", user_id)[1]["x-gateway-cache"] == "miss"
    assert len(calls_for(openai_fake, "gpt-fleeting")) == 2


def test_the_admin_purges_an_agents_or_a_users_answers(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    ask(server, "faq", "Address?", user_id)
    ask(server, "faq", "Phone?", user_id)

    by_user = httpx.delete(f"{server.url}/admin/cache", params={"user": user_id}, timeout=10)
    nothing_left = httpx.delete(
        f"{server.url}/admin/cache", params={"user": user_id, "agent": "faq"}, timeout=10
    )

    assert by_user.status_code == 200 and by_user.json() == {"removed": 2}
    assert nothing_left.json() == {"removed": 0}
    assert ask(server, "faq", "Address?", user_id)[1]["x-gateway-cache"] == "miss"


def test_erasing_a_user_forgets_their_answers(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    ask(server, "faq", "Returns?", user_id)

    erased = httpx.delete(f"{server.url}/admin/users/{user_id}", headers=JSON, timeout=10)

    assert erased.status_code == 200, erased.text
    assert ask(server, "faq", "Returns?", user_id)[1]["x-gateway-cache"] == "miss"


def test_a_hit_spends_nothing_of_a_budget_and_shows_what_it_saved(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    def used() -> tuple[int, float]:
        usage = httpx.get(
            f"{server.url}/admin/usage", params={"user": user_id}, headers=JSON, timeout=10
        ).json()
        return usage["windows"]["day"], usage["cost_usd"]["day"]

    ask(server, "faq", "Delivery times?", user_id)
    after_miss = used()
    ask(server, "faq", "Delivery times?", user_id)

    assert used() == after_miss
    assert after_miss[0] > 0
    spend = httpx.get(
        f"{server.url}/admin/spend", params={"group_by": "user"}, headers=JSON, timeout=10
    ).json()["data"]
    (mine,) = [row for row in spend if row["group"] == user_id]
    assert mine["requests"] == 2
    assert mine["cost_usd"] == pytest.approx(after_miss[1])
    assert mine["saved_usd"] == pytest.approx(after_miss[1])
    assert server.metric("gateway_cache_requests_total", agent="faq", result="hit") >= 1
    assert server.metric("gateway_cache_saved_usd_total", agent="faq") > 0
    page = httpx.get(f"{server.url}/admin/spend", headers={"Accept": "text/html"}, timeout=10)
    assert "Saved by the cache" in page.text


def test_the_agents_page_shows_each_cached_agents_hits(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    for _ in range(4):
        ask(server, "fleeting", "Hit rate?", user_id)

    page = httpx.get(f"{server.url}/admin/agents", headers={"Accept": "text/html"}, timeout=10)

    assert page.status_code == 200
    row = next(line for line in page.text.split("<tr") if ">fleeting<" in line)
    assert re.search(r"exact: \d+% hits of \d+ requests", row), row
    uncached = next(line for line in page.text.split("<tr") if ">uncached<" in line)
    assert ">off<" in uncached


def test_a_low_judge_score_forgets_the_answer_and_a_good_one_keeps_it(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    def judging(verdict: dict[str, Any], question: str) -> None:
        fakes["anthropic"].answer_when(
            lambda recorded: question in json.dumps(recorded.body),
            Reply.of_text(json.dumps(verdict)),
        )

    judging(VERDICT_GOOD, "Good question?")
    judging(VERDICT_BAD, "Bad question?")

    for question in ("Good question?", "Bad question?"):
        ask(server, "judged", question, user_id)
    wait_for(lambda: server.log().count('"event":"judged"') >= 2, "both judges' verdicts logged")

    good = ask(server, "judged", "Good question?", user_id)[1]["x-gateway-cache"]
    bad = ask(server, "judged", "Bad question?", user_id)[1]["x-gateway-cache"]

    assert (good, bad) == ("hit", "miss")


def test_client_tool_calls_come_back_from_the_cache_under_new_ids(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_tool_calls(("get_weather", {"city": "Oslo"})))
    tool = {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }

    def call() -> Any:
        completion = client_of(server).chat.completions.create(
            model="faq",
            messages=[{"role": "user", "content": "Weather in Oslo?"}],
            tools=[tool],
            safety_identifier=user_id,
        )
        (made,) = completion.choices[0].message.tool_calls or []
        return made

    first, second = call(), call()

    assert (first.function.name, first.function.arguments) == (
        second.function.name,
        second.function.arguments,
    )
    assert first.id != second.id
    assert len(calls_for(openai_fake, "gpt-faq")) == 1


def test_a_structured_reply_is_kept_once_it_validates(
    server: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    """The invalid first reply is not kept (its call goes upstream again, and answers the
    same); the repaired one is, so the repair call is a hit."""
    openai_fake.script(
        Reply.of_text("not json"), Reply.of_text('{"city": "Paris"}'), Reply.of_text("not json")
    )
    schema = {
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    }
    response_format = {"type": "json_schema", "json_schema": {"name": "city", "schema": schema}}

    first = ask(server, "faq", "Which city?", user_id, response_format=response_format)
    second = ask(server, "faq", "Which city?", user_id, response_format=response_format)

    assert first[0] == second[0] == '{"city": "Paris"}'
    assert (first[1]["x-gateway-cache"], second[1]["x-gateway-cache"]) == ("miss", "hit")
    assert len(calls_for(openai_fake, "gpt-faq")) == 3


def test_an_agent_without_a_cache_says_nothing_of_it(server: GatewayServer, user_id: str) -> None:
    _, headers, _ = ask(server, "uncached", "Hi?", user_id)
    assert "x-gateway-cache" not in headers


@pytest.mark.slow
def test_two_processes_on_postgresql_share_entries(
    tmp_path_factory: pytest.TempPathFactory,
    upstreams: dict[str, FakeUpstream],
    openai_fake: FakeUpstream,
    postgres_url: str,
) -> None:
    workdir = tmp_path_factory.mktemp("cache-pg")
    first = GatewayServer(workdir, config_text(upstreams), database_url=postgres_url).start()
    second = GatewayServer(
        workdir, None, database_url=postgres_url, config_path=first.config_path
    ).start()
    user = f"pg-{uuid.uuid4().hex[:8]}"
    try:
        _, miss, _ = ask(first, "faq", "Shared?", user)
        _, hit, _ = ask(second, "faq", "Shared?", user)
    finally:
        first.stop()
        second.stop()

    assert (miss["x-gateway-cache"], hit["x-gateway-cache"]) == ("miss", "hit")
    assert len(calls_for(openai_fake, "gpt-faq")) == 1
