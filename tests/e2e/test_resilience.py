"""Upstream failures the client should not see: retries, fallbacks, deployments, circuit
breakers and timeouts, against fake upstreams scripted to fail (docs/resilience.md).

Waits are configured small (backoff 10 ms, first byte 1 s, cooldown 1 s) so that no test
waits on real backoff longer than it must. Tests that fail a deployment repeatedly use
their own agent and models: circuit breakers outlive a test in the server process.
"""

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.polling import wait_for
from tests.server import GatewayServer
from tests.upstreams import api_key_of, fake_base_url, received

KINDS = ["openai", "anthropic", "gemini", "cohere"]
JSON = {"Accept": "application/json"}
# Extra OpenAI-format endpoints: two regions of one provider, a dead one, a slow one.
EXTRA = ["openai-eu", "openai-us", "openai-dead", "openai-spare", "openai-slow"]
POLICY = (
    "retries: {attempts: 2, backoff: 0.01, max_backoff: 0.05, max_retry_after: 2}, "
    "timeout: {connect: 2, first_byte: 1, idle: 1, total: 20}, circuit: {failures: 3, cooldown: 1}"
)
# Retryable failures in each kind's own words, two per kind.
FAILURES: dict[str, list[Reply]] = {
    "openai": [
        Reply.of_error(500, {"error": {"message": "boom", "type": "server_error"}}),
        Reply.of_error(502, "bad gateway"),
    ],
    "anthropic": [
        Reply.of_error(529, {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}),
        Reply.of_error(429, {"type": "error", "error": {"type": "rate_limit_error", "message": "slow"}}),
    ],
    "gemini": [
        Reply.of_error(503, {"error": {"code": 503, "status": "UNAVAILABLE", "message": "busy"}}),
        Reply.of_error(429, {"error": {"code": 429, "status": "RESOURCE_EXHAUSTED", "message": "quota"}}),
    ],
    "cohere": [Reply.of_error(429, {"message": "trial limit"}), Reply.of_error(500, {"message": "x"})],
}  # fmt: skip


@pytest.fixture(scope="module")
def extra() -> Iterator[dict[str, FakeUpstream]]:
    fakes: dict[str, FakeUpstream] = {name: OpenAIUpstream().start() for name in EXTRA}
    yield fakes
    for fake in fakes.values():
        fake.stop()


def config_text(upstreams: dict[str, FakeUpstream], extra: dict[str, FakeUpstream]) -> str:
    lines = ["providers:"]
    for kind in KINDS:
        url = fake_base_url(upstreams[kind])
        lines.append(f"  {kind}: {{api_key: {api_key_of(kind)}, base_url: '{url}', {POLICY}}}")
    for name, fake in extra.items():
        policy = POLICY.replace("attempts: 2", "attempts: 0") if name == "openai-slow" else POLICY
        lines.append(
            f"  {name}: {{kind: openai, api_key: k-{name}, base_url: '{fake_base_url(fake)}', {policy}}}"
        )
    lines += ["agents:"]
    lines += [
        f"  - {{name: retrying-{kind}, provider: {kind}, model: {kind}-model}}" for kind in KINDS
    ]
    lines += [
        "  - {name: regional, provider: openai-eu, model: gpt-r, weight: 1,"
        " deployments: [{provider: openai-us, model: gpt-r, weight: 3}]}",
        "  - {name: halves, provider: openai-eu, model: gpt-h, deployments: [{provider: openai-us, model: gpt-h}]}",
        *(
            f"  - {{name: fallback-{n}, provider: openai, model: gpt-primary-{n}, preamble: You are"
            f" the ACME assistant., fallbacks: [{{provider: anthropic, model: claude-{n}}}]}}"
            for n in range(1, 5)
        ),
        "  - {name: breaker, provider: openai-dead, model: gpt-b, weight: 100000,"
        " deployments: [{provider: openai-spare, model: gpt-b}]}",
        "  - {name: slow, provider: openai-slow, model: gpt-s, fallbacks: [{provider: openai-eu, model: gpt-quick}]}",
        "  - {name: boss, provider: openai, model: gpt-boss, subagents: [helper]}",
        "  - {name: helper, provider: gemini, model: gemini-helper, purpose: Answers questions,"
        " fallbacks: [{provider: cohere, model: cohere-helper}]}",
        "  - {name: judged, provider: openai, model: gpt-judged, judges: [strict]}",
        "judges:",
        "  - {name: strict, provider: openai-dead, model: gpt-judge, fallbacks: [{provider: openai-spare, model: gpt-judge}],"
        " rubrics: {accuracy: Is it accurate?}}",
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory,
    upstreams: dict[str, FakeUpstream],
    extra: dict[str, FakeUpstream],
) -> Iterator[GatewayServer]:
    text = config_text(upstreams, extra)
    gateway = GatewayServer(tmp_path_factory.mktemp("resilience"), text).start()
    yield gateway
    gateway.stop()


@pytest.fixture
def ends(fakes: dict[str, FakeUpstream], extra: dict[str, FakeUpstream]) -> dict[str, FakeUpstream]:
    """Every fake of the module by provider name, each with an empty script."""
    for fake in extra.values():
        fake.reset()
    return {**{kind: fakes[kind] for kind in KINDS}, **extra}


def ask(server: GatewayServer, model: str, **body: Any) -> httpx.Response:
    payload = {
        "model": model,
        "messages": [{"role": "user", "content": "Hello?"}],
        "safety_identifier": "resilience-user",
        "metadata": {"history": "off"},
        **body,
    }
    return httpx.post(f"{server.url}/v1/chat/completions", json=payload, timeout=30)


def text_of(response: httpx.Response) -> str:
    assert response.status_code == 200, response.text
    return str(response.json()["choices"][0]["message"]["content"])


@pytest.mark.parametrize("kind", KINDS)
def test_retryable_failures_are_tried_again_on_every_kind(
    server: GatewayServer, ends: dict[str, FakeUpstream], kind: str
) -> None:
    ends[kind].script(*FAILURES[kind], Reply.of_text("Third time lucky."))

    response = ask(server, f"retrying-{kind}")

    assert text_of(response) == "Third time lucky."
    assert response.headers["x-gateway-attempts"] == "3"
    assert response.headers["x-gateway-upstream"] == f"{kind}/{kind}-model"
    assert len(ends[kind].requests) == 3


@pytest.mark.parametrize(
    "failure",
    [
        Reply.of_error(
            400, {"error": {"message": "bad parameter", "type": "invalid_request_error"}}
        ),
        Reply.of_error(401, {"error": {"message": "wrong key", "type": "invalid_request_error"}}),
        Reply.of_error(
            404, {"error": {"message": "no such model", "type": "invalid_request_error"}}
        ),
    ],
)
def test_other_client_errors_are_not_tried_again(
    server: GatewayServer, ends: dict[str, FakeUpstream], failure: Reply
) -> None:
    ends["openai"].script(failure, Reply.of_text("never sent"))

    response = ask(server, "retrying-openai")

    assert response.status_code in (400, 502)
    assert response.json()["error"]["message"]
    assert response.headers["x-gateway-attempts"] == "1"
    assert len(ends["openai"].requests) == 1


def test_a_valid_retry_after_is_waited_for(
    server: GatewayServer, ends: dict[str, FakeUpstream]
) -> None:
    limited = Reply.of_error(429, {"message": "slow"}, headers={"Retry-After": "0.6"})
    ends["cohere"].script(limited, Reply.of_text("Waited."))

    started = time.monotonic()
    response = ask(server, "retrying-cohere")

    assert text_of(response) == "Waited."
    assert time.monotonic() - started >= 0.6
    assert len(ends["cohere"].requests) == 2


def test_a_retry_after_above_the_cap_moves_on_at_once(
    server: GatewayServer, ends: dict[str, FakeUpstream]
) -> None:
    limited = Reply.of_error(429, "slow", headers={"Retry-After": "60"})
    ends["openai"].script(limited, Reply.of_text("never sent"))
    ends["anthropic"].script(Reply.of_text("From the fallback."))

    response = ask(server, "fallback-1")

    assert text_of(response) == "From the fallback."
    assert len(ends["openai"].requests) == 1  # no wait of a minute, no second try


def test_everything_failing_gives_the_last_failure_once(
    server: GatewayServer, ends: dict[str, FakeUpstream]
) -> None:
    ends["openai"].script(*[Reply.of_error(503, "overloaded")] * 3)
    overloaded = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    ends["anthropic"].script(*[Reply.of_error(529, overloaded)] * 3)

    response = ask(server, "fallback-2")

    assert response.status_code == 503
    assert response.json()["error"]["code"] == "upstream_overloaded"
    assert "anthropic" in response.json()["error"]["message"]
    assert response.headers["x-gateway-attempts"] == "6"
    assert (len(ends["openai"].requests), len(ends["anthropic"].requests)) == (3, 3)


def test_the_fallback_answers_with_the_agents_own_preamble(
    server: GatewayServer, ends: dict[str, FakeUpstream]
) -> None:
    ends["openai"].script(*[Reply.of_error(500, "down")] * 3)
    ends["anthropic"].script(Reply.of_text("Fallback here."))

    response = ask(server, "fallback-3")

    assert text_of(response) == "Fallback here."
    assert response.headers["x-gateway-upstream"] == "anthropic/claude-3"
    assert response.headers["x-gateway-attempts"] == "4"
    sent = received("anthropic", ends["anthropic"].last)
    assert sent.model == "claude-3"
    assert sent.system.startswith("You are the ACME assistant.")
    assert sent.turns == [("user", "Hello?")]


def test_a_prompt_too_long_goes_to_the_fallback_at_once(
    server: GatewayServer, ends: dict[str, FakeUpstream]
) -> None:
    too_long = {
        "error": {
            "message": "This model's maximum context length is 128000 tokens.",
            "type": "invalid_request_error",
            "code": "context_length_exceeded",
        }
    }
    ends["openai"].script(Reply.of_error(400, too_long), Reply.of_text("never sent"))
    ends["anthropic"].script(Reply.of_text("I have a longer context."))

    response = ask(server, "fallback-4")

    assert text_of(response) == "I have a longer context."
    assert response.headers["x-gateway-attempts"] == "2"
    assert len(ends["openai"].requests) == 1


def test_two_deployments_share_the_load_by_weight(
    server: GatewayServer, ends: dict[str, FakeUpstream]
) -> None:
    answered = [ask(server, "regional").headers["x-gateway-upstream"] for _ in range(80)]

    us, eu = answered.count("openai-us/gpt-r"), answered.count("openai-eu/gpt-r")
    assert us + eu == 80
    assert 45 <= us <= 75, (us, eu)  # weight 3 of 4: 60 expected
    assert (len(ends["openai-us"].requests), len(ends["openai-eu"].requests)) == (us, eu)


def test_a_retry_goes_to_the_deployment_not_tried_yet(
    server: GatewayServer, ends: dict[str, FakeUpstream]
) -> None:
    ends["openai-eu"].answer_when(lambda recorded: True, Reply.of_error(500, "eu is down"))

    responses = [ask(server, "halves") for _ in range(6)]

    assert all(text_of(response).startswith("You said") for response in responses)
    assert {response.headers["x-gateway-upstream"] for response in responses} == {"openai-us/gpt-h"}
    assert all(response.headers["x-gateway-attempts"] in ("1", "2") for response in responses)
    # Never twice to the failing region within one request; after three failures its
    # circuit opens and it gets no more traffic.
    assert len(ends["openai-eu"].requests) <= 3
    assert len(ends["openai-us"].requests) == 6


def test_a_dead_deployment_is_skipped_once_its_circuit_opens_and_probed_after_cooldown(
    server: GatewayServer, ends: dict[str, FakeUpstream]
) -> None:
    dead = ends["openai-dead"]
    dead.answer_when(lambda recorded: True, Reply.of_error(503, "dead"))

    # The dead one is picked first (weight 100000 to 1), fails, the spare answers. The
    # circuit opens on the third failure: between `earliest` and `latest`.
    for _ in range(2):
        assert ask(server, "breaker").headers["x-gateway-upstream"] == "openai-spare/gpt-b"
    earliest = time.monotonic()
    assert ask(server, "breaker").headers["x-gateway-upstream"] == "openai-spare/gpt-b"
    latest = time.monotonic()
    assert len(dead.requests) == 3

    probes = 0
    for _ in range(5):
        sent = time.monotonic()
        response = ask(server, "breaker")
        if response.headers["x-gateway-attempts"] != "1":
            # The dead one was probed: only after the cooldown (on a slow machine); it
            # failed, and its circuit opened again.
            assert time.monotonic() - earliest >= 1
            probes += 1
            earliest, latest = sent, time.monotonic()
    assert len(dead.requests) == 3 + probes
    labels = {"provider": "openai-dead", "model": "gpt-b"}
    state = httpx.get(
        f"{server.url}/admin/providers/openai-dead/state", headers=JSON, timeout=10
    ).json()
    assert {d["model"]: d["state"] for d in state["deployments"]}["gpt-b"] in ("open", "half-open")
    assert server.metric("gateway_circuit_open", **labels) == 1
    assert (
        server.metric("gateway_upstream_attempts_total", outcome="upstream_overloaded", **labels)
        >= 3
    )

    dead.reset()  # it recovers
    time.sleep(max(0.0, latest + 1.1 - time.monotonic()))
    response = ask(server, "breaker")

    assert response.headers["x-gateway-upstream"] == "openai-dead/gpt-b"  # the probe
    assert len(dead.requests) == 1
    state = httpx.get(
        f"{server.url}/admin/providers/openai-dead/state", headers=JSON, timeout=10
    ).json()
    assert {d["model"]: d["state"] for d in state["deployments"]}["gpt-b"] == "closed"
    assert server.metric("gateway_circuit_open", **labels) == 0
    page = httpx.get(f"{server.url}/admin/providers", headers={"Accept": "text/html"}).text
    assert "gpt-b: healthy" in page


def test_a_first_byte_timeout_fails_over(
    server: GatewayServer, ends: dict[str, FakeUpstream]
) -> None:
    ends["openai-slow"].script(Reply.of_text("too late", delay=2))
    ends["openai-eu"].script(Reply.of_text("Quick answer."))

    response = ask(server, "slow")

    assert text_of(response) == "Quick answer."
    assert response.headers["x-gateway-upstream"] == "openai-eu/gpt-quick"
    assert response.headers["x-gateway-attempts"] == "2"


def stream_frames(server: GatewayServer, model: str) -> tuple[httpx.Response, list[str]]:
    payload = {
        "model": model,
        "messages": [{"role": "user", "content": "Hello?"}],
        "safety_identifier": "resilience-user",
        "metadata": {"history": "off"},
        "stream": True,
    }
    with httpx.stream(
        "POST", f"{server.url}/v1/chat/completions", json=payload, timeout=30
    ) as response:
        frames = [line[6:] for line in response.iter_lines() if line.startswith("data: ")]
    return response, frames


def streamed_text(frames: list[str]) -> str:
    chunks = [json.loads(frame) for frame in frames if frame != "[DONE]"]
    return "".join(
        chunk["choices"][0]["delta"].get("content") or ""
        for chunk in chunks
        if chunk.get("choices")
    )


def test_a_stream_cut_before_its_first_content_is_tried_again(
    server: GatewayServer, ends: dict[str, FakeUpstream]
) -> None:
    ends["openai"].script(
        Reply.of_chunks("lost ", "words", drop_after_chunks=1),  # only the role chunk went out
        Reply.of_chunks("whole ", "answer"),
    )

    response, frames = stream_frames(server, "retrying-openai")

    assert response.headers["x-gateway-attempts"] == "2"
    assert streamed_text(frames) == "whole answer"
    assert frames[-1] == "[DONE]"


def test_a_stream_cut_after_content_ends_with_an_error_frame_and_no_second_answer(
    server: GatewayServer, ends: dict[str, FakeUpstream]
) -> None:
    ends["openai"].script(
        Reply.of_chunks("one ", "two ", "three", drop_after_chunks=3), Reply.of_text("second")
    )

    _, frames = stream_frames(server, "retrying-openai")

    assert streamed_text(frames[:-1]) == "one two "
    assert '"error"' in frames[-1] and "[DONE]" not in frames
    assert len(ends["openai"].requests) == 1


def test_responses_are_tried_again_too(
    server: GatewayServer, ends: dict[str, FakeUpstream]
) -> None:
    ends["gemini"].script(FAILURES["gemini"][0], Reply.of_text("Responses recovered."))
    client = openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)

    raw = client.responses.with_raw_response.create(
        model="retrying-gemini",
        input="Hello?",
        safety_identifier="resilience-user",
        metadata={"history": "off"},
    )

    assert raw.parse().output_text == "Responses recovered."
    assert raw.headers["x-gateway-attempts"] == "2"


def test_a_subagent_falls_back_like_any_agent(
    server: GatewayServer, ends: dict[str, FakeUpstream]
) -> None:
    ends["openai"].script(
        Reply.of_tool_calls(("helper", {"message": "What is 2+2?"})), Reply.of_text("It is 4.")
    )
    ends["gemini"].script(*[FAILURES["gemini"][0]] * 3)
    ends["cohere"].script(Reply.of_text("4"))

    assert text_of(ask(server, "boss")) == "It is 4."

    assert len(ends["gemini"].requests) == 3
    assert received("cohere", ends["cohere"].last).model == "cohere-helper"
    tool_result = ends["openai"].last.body["messages"][-1]
    assert (tool_result["role"], tool_result["content"]) == ("tool", "4")


def test_a_judge_falls_back_like_any_agent(
    server: GatewayServer, ends: dict[str, FakeUpstream]
) -> None:
    def judge_call(recorded: Recorded) -> bool:
        return "impartial judge" in json.dumps(recorded.body)

    ends["openai-dead"].answer_when(judge_call, Reply.of_error(500, "judge model down"))
    verdict = {"accuracy": {"score": 9, "reasoning": "Right."}}
    ends["openai-spare"].answer_when(judge_call, Reply.of_text(json.dumps(verdict)))
    ends["openai"].script(Reply.of_text("Paris."))

    assert text_of(ask(server, "judged")) == "Paris."

    wait_for(lambda: ends["openai-spare"].requests, "the judge's fallback to be asked")
    assert received("openai", ends["openai-spare"].last).model == "gpt-judge"


def test_every_attempt_is_in_the_request_log(
    server: GatewayServer, ends: dict[str, FakeUpstream]
) -> None:
    ends["openai"].script(Reply.of_error(500, "down"), Reply.of_text("Logged."))
    response = ask(server, "retrying-openai")
    assert text_of(response) == "Logged."
    request_id = response.headers["x-request-id"]

    def logged() -> list[dict[str, Any]]:
        lines = [json.loads(line) for line in server.log().splitlines() if request_id in line]
        return [line for line in lines if line.get("event") == "request"]

    line = wait_for(logged, "the request's log line")[0]
    assert [(a["provider"], a["model"], a["status"]) for a in line["attempts"]] == [
        ("openai", "openai-model", 502),
        ("openai", "openai-model", 200),
    ]
    assert line["upstream"] == "openai/openai-model"
    assert all(attempt["ms"] >= 0 for attempt in line["attempts"])
