"""``GET /metrics`` counts what ``/v1`` served; ``X-Gateway-Overhead-Ms`` on every reply."""

import httpx

from tests.fakes.base import FakeUpstream, Reply
from tests.server import GatewayServer


def chat(server: GatewayServer, user_id: str, **extra: object) -> httpx.Response:
    body = {
        "model": "openai-agent",
        "messages": [{"role": "user", "content": "hello"}],
        "safety_identifier": user_id,
        **extra,
    }
    return httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=30)


def test_metrics_count_a_request_and_its_tokens(gateway: GatewayServer, user_id: str) -> None:
    labels = {"agent": "openai-agent", "status": "200", "stream": "false"}
    requests = gateway.metric("gateway_requests_total", **labels)
    prompt = gateway.metric("gateway_tokens_total", agent="openai-agent", kind="prompt")
    durations = gateway.metric("gateway_overhead_seconds_count", stream="false")
    assert chat(gateway, user_id).status_code == 200
    assert gateway.metric("gateway_requests_total", **labels) == requests + 1
    assert gateway.metric("gateway_tokens_total", agent="openai-agent", kind="prompt") == (
        prompt + 11
    )
    assert gateway.metric("gateway_overhead_seconds_count", stream="false") == durations + 1


def test_metrics_count_budget_refusals(gateway: GatewayServer, user_id: str) -> None:
    refusals = gateway.metric("gateway_budget_refusals_total")
    assert chat(gateway, user_id, metadata={"tokens_per_day": "0"}).status_code == 429
    assert gateway.metric("gateway_budget_refusals_total") == refusals + 1


def test_metrics_refuse_a_client_through_a_proxy(gateway: GatewayServer) -> None:
    response = httpx.get(f"{gateway.url}/metrics", headers={"X-Forwarded-For": "203.0.113.9"})
    assert response.status_code == 403
    assert "loopback" in response.text


def test_overhead_header_is_on_replies_and_streams(gateway: GatewayServer, user_id: str) -> None:
    reply = chat(gateway, user_id)
    stream = chat(gateway, user_id, stream=True)
    refused = chat(gateway, user_id, messages=[])
    for response in (reply, stream, refused):
        assert float(response.headers["X-Gateway-Overhead-Ms"]) >= 0
    assert stream.headers["content-type"].startswith("text/event-stream")
    assert refused.status_code == 400


def test_overhead_leaves_out_the_waits_on_the_upstream(
    gateway: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    """A reply the upstream took a second to start, a stream whose events came half a
    second apart: the gateway's own time is what remains."""
    openai_fake.script(
        Reply.of_text("slow", delay=1.0), Reply.of_chunks("a", "b", "c", chunk_delay=0.5)
    )
    reply = chat(gateway, user_id)
    streamed_before = gateway.metric("gateway_overhead_seconds_sum", stream="true")
    stream = chat(gateway, user_id, stream=True)

    assert (reply.json()["choices"][0]["message"]["content"], stream.status_code) == ("slow", 200)
    assert float(reply.headers["X-Gateway-Overhead-Ms"]) < 1000
    streamed = gateway.metric("gateway_overhead_seconds_sum", stream="true") - streamed_before
    assert 0 < streamed < 1.0
