"""The in-process span record, sampling, and the built-in store's compact form."""

from collections.abc import Callable, Iterator

import pytest

from agents.schema import TelemetryConfig
from inference.ledger.requests import span_tree
from inference.telemetry.spans import NO_SPAN, RequestTrace
from inference.telemetry.tracing import Tracing

CALLER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"
UNSAMPLED_CALLER = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-00"


@pytest.fixture
def tracing() -> Iterator[Tracing]:
    traced = Tracing()
    yield traced
    traced.shutdown()


def finished() -> tuple[list[RequestTrace], Callable[[RequestTrace], None]]:
    done: list[RequestTrace] = []
    return done, done.append


def test_nothing_is_recorded_with_the_store_off_and_no_exporter(tracing: Tracing) -> None:
    tracing.apply(TelemetryConfig(store=False))
    done, on_done = finished()

    root = tracing.begin("POST /v1/chat/completions", {}, {}, on_done)

    assert root is NO_SPAN and not root.recording
    assert root.child("invoke_agent a") is NO_SPAN
    root.end()
    assert done == []


def test_the_store_gets_every_request_while_export_follows_the_sampler(
    tracing: Tracing, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OTEL_TRACES_SAMPLER", raising=False)
    tracing.apply(TelemetryConfig(otlp_endpoint="http://127.0.0.1:9", sample_rate=0.0))
    done, on_done = finished()

    alone = tracing.begin("POST /v1/responses", {}, {}, on_done)
    followed = tracing.begin("POST /v1/responses", {"traceparent": CALLER}, {}, on_done)
    refused = tracing.begin("POST /v1/responses", {"traceparent": UNSAMPLED_CALLER}, {}, on_done)

    assert alone.recording and not alone.trace.sampled  # rate 0: not exported, still kept
    assert followed.trace.sampled  # a sampled caller is always followed
    assert f"{followed.trace.trace_id:032x}" == "0af7651916cd43dd8448eb211c80319c"
    assert followed.trace.remote_parent == 0xB7AD6B7169203331
    assert followed.traceparent().endswith("-01") and alone.traceparent().endswith("-00")
    assert not refused.trace.sampled
    for root in (alone, followed, refused):
        root.end()
    assert len(done) == 3


def test_a_trace_is_done_once_the_request_and_the_work_after_it_have_ended(
    tracing: Tracing,
) -> None:
    done, on_done = finished()
    root = tracing.begin("POST /v1/chat/completions", {}, {}, on_done)
    release = root.hold()  # a judge, after the reply

    root.end()
    assert done == []
    release()
    release()  # letting go twice counts once
    assert done == [root.trace]


def test_compact_spans_come_back_as_the_tree(tracing: Tracing) -> None:
    done, on_done = finished()
    root = tracing.begin("POST /v1/chat/completions", {}, {"url.path": "/v1"}, on_done)
    with root.child("invoke_agent a") as invoke:
        with invoke.child("chat m", "client", {"gen_ai.usage.input_tokens": 3}) as chat:
            chat.fail("upstream_error")
        with pytest.raises(ValueError), invoke.child("execute_tool t"):
            raise ValueError("broken tool")
    root.end()

    (tree,) = span_tree(done[0].compact())

    assert tree["name"] == "POST /v1/chat/completions" and tree["kind"] == "server"
    (agent,) = tree["children"]
    chat_node, tool_node = agent["children"]
    assert (chat_node["name"], chat_node["kind"], chat_node["status"]) == (
        "chat m",
        "client",
        "error",
    )
    assert chat_node["attributes"] == {
        "gen_ai.usage.input_tokens": 3,
        "error.type": "upstream_error",
    }
    assert tool_node["attributes"]["error.type"] == "ValueError"
    assert tree["duration_ms"] >= agent["duration_ms"] >= 0
    assert chat_node["start_ms"] >= agent["start_ms"] >= 0
