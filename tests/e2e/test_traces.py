"""Traces (docs/telemetry.md): the span tree each request exports over OTLP/HTTP to an
in-test collector that decodes the protobuf, the ``traceparent`` the gateway passes on to
upstreams and MCP servers, the GenAI metrics, and the same tree in the admin's Requests
pages (JSON and headless Chromium).

Each test sends its own W3C ``traceparent``, so its trace is found by that trace id.
"""

import json
import secrets
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

from tests.browser import chromium_page, shot
from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.mcp_servers import http_greeter
from tests.otlp import Collector, ReceivedSpan
from tests.polling import wait_for
from tests.server import GatewayServer, free_port
from tests.upstreams import api_key_of, fake_base_url

KINDS = ["openai", "anthropic", "gemini", "cohere"]
PROVIDER_NAMES = {"openai": "openai", "anthropic": "anthropic", "gemini": "gcp.gemini", "cohere": "cohere"}  # fmt: skip
RESPONSE_IDS = {"openai": "chatcmpl-fake", "anthropic": "msg_fake", "gemini": "fake-response", "cohere": "fake-chat"}  # fmt: skip
JSON = {"Accept": "application/json"}
VERDICT = {"accuracy": {"score": 9, "reasoning": "Right."}}


@pytest.fixture(scope="module")
def collector() -> Iterator[Collector]:
    receiver = Collector().start()
    yield receiver
    receiver.stop()


@pytest.fixture(scope="module")
def web_greeter() -> Iterator[int]:
    with http_greeter(free_port()) as port:
        yield port


def config_text(
    upstreams: dict[str, FakeUpstream], collector: Collector, mcp_port: int, capture: bool
) -> str:
    lines = ["providers:"]
    for kind in KINDS:
        url = fake_base_url(upstreams[kind])
        lines.append(
            f"  {kind}: {{api_key: {api_key_of(kind)}, base_url: '{url}', retries: {{attempts: 0}}}}"
        )
    openai_url = fake_base_url(upstreams["openai"])
    lines += [
        f"  flaky: {{kind: openai, api_key: k, base_url: '{openai_url}', retries: {{attempts: 1, backoff: 0.01}}}}",
        "mcp:",
        f"  web: {{transport: http, url: 'http://127.0.0.1:{mcp_port}/mcp'}}",
        "agents:",
        *(f"  - {{name: traced-{kind}, provider: {kind}, model: {kind}-model}}" for kind in KINDS),
        "  - {name: toolful, provider: openai, model: gpt-tools, mcp_tools: [{server: web, only: [trace_header]}], subagents: [helper]}",
        "  - {name: helper, provider: anthropic, model: claude-helper, purpose: Answers sub-questions.}",
        "  - {name: judged, provider: openai, model: gpt-judged, judges: [critic]}",
        "  - {name: retried, provider: flaky, model: gpt-retry}",
        "  - {name: cached, provider: openai, model: gpt-cached, history: false, cache: {mode: exact}}",
        "judges:",
        "  - {name: critic, provider: gemini, model: gemini-judge, rubrics: {accuracy: Is it right?}}",
        "telemetry:",
        f"  otlp_endpoint: '{collector.endpoint}'",
        "  headers: {x-collector-key: secret-123}",
        f"  capture_content: {'true' if capture else 'false'}",
    ]  # fmt: skip
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory,
    upstreams: dict[str, FakeUpstream],
    collector: Collector,
    web_greeter: int,
) -> Iterator[GatewayServer]:
    text = config_text(upstreams, collector, web_greeter, capture=False)
    gateway = GatewayServer(
        tmp_path_factory.mktemp("traces"), text, extra_env={"OTEL_BSP_SCHEDULE_DELAY": "50"}
    ).start()
    wait_for(lambda: _mcp_connected(gateway), "the MCP server to connect")
    yield gateway
    gateway.stop()


def _mcp_connected(gateway: GatewayServer) -> bool:
    state = httpx.get(f"{gateway.url}/admin/mcp/web/state", headers=JSON).json()
    return bool(state["state"] == "connected")


def client_of(server: GatewayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{server.url}/v1", api_key="unused", max_retries=0)


def new_trace() -> tuple[str, str, str]:
    """A caller's trace id, its span id, and the traceparent that carries them."""
    trace_id, span_id = secrets.token_hex(16), secrets.token_hex(8)
    return trace_id, span_id, f"00-{trace_id}-{span_id}-01"


def ask(
    server: GatewayServer, model: str, traceparent: str, user: str = "tracer", **body: Any
) -> Any:
    return client_of(server).chat.completions.with_raw_response.create(
        model=model,
        messages=[{"role": "user", "content": "Hello?"}],
        user=user,
        extra_headers={"traceparent": traceparent},
        **body,
    )


def one(spans: list[ReceivedSpan], name: str) -> ReceivedSpan:
    (found,) = [span for span in spans if span.name == name]
    return found


def children(spans: list[ReceivedSpan], parent: ReceivedSpan) -> list[ReceivedSpan]:
    return [span for span in spans if span.parent_id == parent.span_id]


def traceparent_of(recorded: Recorded) -> str:
    return recorded.headers.get("traceparent") or recorded.headers.get("Traceparent") or ""


@pytest.mark.parametrize("kind", KINDS)
def test_each_kind_gives_the_span_tree_with_genai_attributes(
    server: GatewayServer, fakes: dict[str, FakeUpstream], collector: Collector, kind: str
) -> None:
    trace_id, caller_span, traceparent = new_trace()
    fakes[kind].script(Reply.of_text("Hi there.", prompt_tokens=12, completion_tokens=5))

    ask(server, f"traced-{kind}", traceparent, temperature=0.3, max_tokens=50)

    spans = collector.wait_for_trace(trace_id, {f"chat {kind}-model"})
    root = one(spans, "POST /v1/chat/completions")
    invoke = one(spans, f"invoke_agent traced-{kind}")
    chat = one(spans, f"chat {kind}-model")
    assert (root.kind, invoke.kind, chat.kind) == ("server", "internal", "client")
    assert root.parent_id == caller_span  # the caller's trace goes on
    assert invoke.parent_id == root.span_id and chat.parent_id == invoke.span_id
    assert root.service == "agent-gateway"
    assert root.attributes["http.response.status_code"] == 200
    assert invoke.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert invoke.attributes["gen_ai.agent.name"] == f"traced-{kind}"
    assert invoke.attributes["gateway.user.id"] == "tracer"
    attributes = chat.attributes
    assert attributes["gen_ai.operation.name"] == "chat"
    assert attributes["gen_ai.provider.name"] == PROVIDER_NAMES[kind]
    assert attributes["gen_ai.request.model"] == f"{kind}-model"
    assert attributes["gen_ai.response.id"] == RESPONSE_IDS[kind]
    assert attributes["gen_ai.response.finish_reasons"] == ["stop"]
    assert attributes["gen_ai.usage.input_tokens"] == 12
    assert attributes["gen_ai.usage.output_tokens"] == 5
    assert attributes["gen_ai.request.temperature"] == 0.3
    assert attributes["gen_ai.request.max_tokens"] == 50
    assert attributes["server.address"] == "127.0.0.1"
    assert attributes["server.port"] == int(
        fake_base_url(fakes[kind]).rsplit(":", 1)[1].split("/")[0]
    )
    assert attributes["gateway.attempt"] == 1
    assert "gen_ai.input.messages" not in attributes  # content only when asked for
    assert "gen_ai.output.messages" not in attributes
    # The upstream call carried the chat span's traceparent.
    assert traceparent_of(fakes[kind].last) == f"00-{trace_id}-{chat.span_id}-01"


def test_a_stream_is_traced_to_its_end(
    server: GatewayServer, fakes: dict[str, FakeUpstream], collector: Collector
) -> None:
    trace_id, _, traceparent = new_trace()
    fakes["anthropic"].script(
        Reply.of_chunks("One, ", "two.", prompt_tokens=9, completion_tokens=4)
    )

    stream = client_of(server).chat.completions.create(
        model="traced-anthropic",
        messages=[{"role": "user", "content": "Count."}],
        stream=True,
        user="streamer",
        extra_headers={"traceparent": traceparent},
    )
    assert (
        "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
        == "One, two."
    )

    spans = collector.wait_for_trace(
        trace_id, {"chat anthropic-model", "POST /v1/chat/completions"}
    )
    chat = one(spans, "chat anthropic-model")
    assert chat.attributes["gen_ai.usage.output_tokens"] == 4
    assert chat.attributes["gen_ai.response.model"] == "anthropic-model"
    root = one(spans, "POST /v1/chat/completions")
    assert root.end_ns >= chat.end_ns


def test_tools_and_subagents_nest_and_mcp_calls_carry_the_traceparent(
    server: GatewayServer, fakes: dict[str, FakeUpstream], collector: Collector
) -> None:
    trace_id, _, traceparent = new_trace()
    fakes["openai"].script(
        Reply.of_tool_calls(("trace_header", {}), ("helper", {"message": "What is 2+2?"})),
        Reply.of_text("All done."),
    )
    fakes["anthropic"].script(Reply.of_text("Four."))

    response = ask(server, "toolful", traceparent)

    assert response.parse().choices[0].message.content == "All done."
    names = {"execute_tool trace_header", "execute_tool helper", "invoke_agent helper"}
    spans = collector.wait_for_trace(trace_id, names | {"POST /v1/chat/completions"})
    invoke = one(spans, "invoke_agent toolful")
    chats = [span for span in spans if span.name == "chat gpt-tools"]
    assert len(chats) == 2 and all(chat.parent_id == invoke.span_id for chat in chats)
    mcp_tool = one(spans, "execute_tool trace_header")
    assert mcp_tool.parent_id == invoke.span_id
    assert mcp_tool.attributes["gen_ai.operation.name"] == "execute_tool"
    assert mcp_tool.attributes["gen_ai.tool.type"] == "extension"
    assert mcp_tool.attributes["gen_ai.tool.call.id"]
    subagent_tool = one(spans, "execute_tool helper")
    helper = one(spans, "invoke_agent helper")
    helper_chat = one(spans, "chat claude-helper")
    assert helper.parent_id == subagent_tool.span_id
    assert helper_chat.parent_id == helper.span_id
    assert helper_chat.attributes["gen_ai.provider.name"] == "anthropic"
    # What the MCP server saw as the HTTP request's traceparent: the tool span's.
    results = fakes["openai"].last.body["messages"]
    tool_results = {m["tool_call_id"]: m["content"] for m in results if m["role"] == "tool"}
    assert f"00-{trace_id}-{mcp_tool.span_id}-01" in tool_results.values()


def test_every_attempt_is_a_chat_span_and_failures_are_error_spans(
    server: GatewayServer, fakes: dict[str, FakeUpstream], collector: Collector
) -> None:
    trace_id, _, traceparent = new_trace()
    fakes["openai"].script(Reply.of_error(503, "overloaded"), Reply.of_text("Second time."))

    ask(server, "retried", traceparent)

    spans = collector.wait_for_trace(trace_id, {"POST /v1/chat/completions"})
    attempts = sorted(
        (span for span in spans if span.name == "chat gpt-retry"),
        key=lambda span: span.attributes["gateway.attempt"],
    )
    assert [span.error for span in attempts] == [True, False]
    assert attempts[0].attributes["error.type"] == "upstream_overloaded"
    assert "error.type" not in attempts[1].attributes

    failed_trace, _, traceparent = new_trace()
    fakes["openai"].script(Reply.of_error(500, "boom"))
    with pytest.raises(openai.APIStatusError):
        ask(server, "traced-openai", traceparent)
    spans = collector.wait_for_trace(failed_trace, {"POST /v1/chat/completions"})
    root = one(spans, "POST /v1/chat/completions")
    assert root.error and root.attributes["http.response.status_code"] == 502
    assert one(spans, "invoke_agent traced-openai").attributes["error.type"] == "upstream_error"
    assert one(spans, "chat openai-model").error


def test_judges_are_in_the_replys_trace(
    server: GatewayServer, fakes: dict[str, FakeUpstream], collector: Collector
) -> None:
    trace_id, _, traceparent = new_trace()
    fakes["openai"].script(Reply.of_text("Paris."))
    fakes["gemini"].script(Reply.of_text(json.dumps(VERDICT)))

    ask(server, "judged", traceparent)

    spans = collector.wait_for_trace(trace_id, {"invoke_agent critic", "chat gemini-judge"})
    root = one(spans, "POST /v1/chat/completions")
    judge = one(spans, "invoke_agent critic")
    assert judge.parent_id == root.span_id
    assert one(spans, "chat gemini-judge").parent_id == judge.span_id


def test_a_gemini_request_is_traced_and_judged_like_any_other(
    server: GatewayServer, fakes: dict[str, FakeUpstream], collector: Collector
) -> None:
    trace_id, _, traceparent = new_trace()
    fakes["openai"].script(Reply.of_text("Paris."))
    fakes["gemini"].script(Reply.of_text(json.dumps(VERDICT)))

    response = httpx.post(
        f"{server.url}/v1beta/models/judged:generateContent",
        json={"contents": [{"role": "user", "parts": [{"text": "Capital of France?"}]}]},
        headers={"traceparent": traceparent, "X-User-Id": "gemini-tracer"},
        timeout=30,
    )

    assert response.status_code == 200, response.text
    spans = collector.wait_for_trace(trace_id, {"invoke_agent critic", "chat gemini-judge"})
    root = one(spans, "POST /v1beta/models/judged:generateContent")
    assert one(spans, "invoke_agent judged").parent_id == root.span_id
    assert one(spans, "invoke_agent critic").parent_id == root.span_id


def test_the_chat_span_tells_the_caches_result(
    server: GatewayServer, fakes: dict[str, FakeUpstream], collector: Collector
) -> None:
    """A miss's chat span is the upstream call's; a hit's has no call under it."""
    user = f"cached-{secrets.token_hex(4)}"
    results = []
    for _ in range(2):
        trace_id, _, traceparent = new_trace()
        ask(server, "cached", traceparent, user=user)
        spans = collector.wait_for_trace(trace_id, {"chat gpt-cached"})
        chat = one(spans, "chat gpt-cached")
        results.append(chat.attributes["gateway.cache.result"])
        if results[-1] == "hit":
            assert chat.attributes["gen_ai.usage.output_tokens"] > 0
            assert "server.address" not in chat.attributes
    assert results == ["miss", "hit"]
    assert len([r for r in fakes["openai"].requests if r.body["model"] == "gpt-cached"]) == 1


def test_a_request_without_traceparent_starts_its_own_trace_and_exports_with_headers(
    server: GatewayServer, collector: Collector
) -> None:
    user = f"fresh-{secrets.token_hex(4)}"
    response = httpx.post(
        f"{server.url}/v1/responses",
        json={"model": "traced-openai", "input": "Hi", "user": user},
        timeout=30,
    )
    assert response.status_code == 200

    def mine() -> list[ReceivedSpan]:
        return [s for s in collector.spans if s.attributes.get("gateway.user.id") == user]

    (invoke,) = wait_for(mine, "the Responses request's spans")
    spans = collector.trace(invoke.trace_id)
    root = one(spans, "POST /v1/responses")
    assert root.parent_id == ""
    assert all(headers.get("x-collector-key") == "secret-123" for headers in collector.headers)


def test_content_is_captured_only_when_asked(
    server: GatewayServer,
    fakes: dict[str, FakeUpstream],
    collector: Collector,
    upstreams: dict[str, FakeUpstream],
    web_greeter: int,
) -> None:
    server.config_path.write_text(config_text(upstreams, collector, web_greeter, capture=True))

    def captured() -> dict[str, Any]:
        trace_id, _, traceparent = new_trace()
        fakes["openai"].script(Reply.of_text("Captured reply."))
        ask(server, "traced-openai", traceparent)
        spans = collector.wait_for_trace(trace_id, {"chat openai-model"})
        attributes = one(spans, "chat openai-model").attributes
        return attributes if "gen_ai.input.messages" in attributes else {}

    try:
        attributes = wait_for(captured, "the reloaded config to capture content")
    finally:
        server.config_path.write_text(config_text(upstreams, collector, web_greeter, capture=False))
    inputs = json.loads(attributes["gen_ai.input.messages"])
    assert inputs[-1] == {"role": "user", "parts": [{"type": "text", "content": "Hello?"}]}
    outputs = json.loads(attributes["gen_ai.output.messages"])
    assert outputs[0]["parts"] == [{"type": "text", "content": "Captured reply."}]


def test_metrics_have_the_genai_histograms(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    fakes["cohere"].script(Reply.of_text("Counted.", prompt_tokens=20, completion_tokens=3))
    ask(server, "traced-cohere", new_trace()[2])

    labels = {"gen_ai_operation_name": "chat", "gen_ai_provider_name": "cohere", "gen_ai_request_model": "cohere-model"}  # fmt: skip
    assert (
        server.metric("gen_ai_client_operation_duration_seconds_count", **labels, error_type="")
        >= 1
    )
    assert server.metric("gen_ai_client_token_usage_sum", **labels, gen_ai_token_type="input") >= 20
    assert server.metric("gen_ai_client_token_usage_sum", **labels, gen_ai_token_type="output") >= 3


# ---- the built-in view: /admin/requests -------------------------------------------------


def test_admin_keeps_each_request_with_its_span_tree(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    user = f"viewer-{secrets.token_hex(4)}"
    fakes["gemini"].script(Reply.of_text("Stored.", prompt_tokens=8, completion_tokens=2))
    response = ask(server, "traced-gemini", new_trace()[2], user=user)
    request_id = response.headers["x-request-id"]
    completion_id = response.parse().id

    listed = wait_for(
        lambda: httpx.get(
            f"{server.url}/admin/requests", params={"user": user}, headers=JSON
        ).json()["data"],
        "the request's record",
    )
    (row,) = listed
    assert row["id"] == request_id
    assert (row["user"], row["model"], row["agent"], row["status"]) == (
        user,
        "traced-gemini",
        "traced-gemini",
        200,
    )
    assert (row["input_tokens"], row["output_tokens"], row["attempts"]) == (8, 2, 1)
    assert row["upstream"] == "gemini/gemini-model"
    assert row["completion_id"] == completion_id

    detail = httpx.get(f"{server.url}/admin/requests/{request_id}", headers=JSON).json()
    (root,) = detail["spans"]
    assert root["name"] == "POST /v1/chat/completions" and root["kind"] == "server"
    (invoke,) = root["children"]
    (chat,) = invoke["children"]
    assert chat["name"] == "chat gemini-model" and chat["status"] == "ok"
    assert chat["attributes"]["gen_ai.usage.input_tokens"] == 8
    assert (
        chat["start_ms"] >= 0 and chat["start_ms"] + chat["duration_ms"] <= root["duration_ms"] + 1
    )

    missing = httpx.get(f"{server.url}/admin/requests/no-such-request", headers=JSON)
    assert missing.status_code == 404


def test_admin_requests_filter_by_agent_status_and_time(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    user = f"filter-{secrets.token_hex(4)}"
    fakes["openai"].script(Reply.of_text("Fine."), Reply.of_error(500, "boom"))
    ask(server, "traced-openai", new_trace()[2], user=user)
    with pytest.raises(openai.APIStatusError):
        ask(server, "traced-openai", new_trace()[2], user=user)

    def listed(**params: str) -> list[dict[str, Any]]:
        found = httpx.get(
            f"{server.url}/admin/requests", params={"user": user, **params}, headers=JSON
        )
        assert found.status_code == 200, found.text
        return list(found.json()["data"])

    wait_for(lambda: len(listed()) == 2, "both records")
    assert [row["status"] for row in listed(status="502")] == [502]
    assert [row["status"] for row in listed(agent="traced-openai")] == [502, 200]  # newest first
    assert listed(agent="traced-anthropic") == []
    assert listed(since="2999-01-01T00:00:00Z") == []
    assert (
        httpx.get(
            f"{server.url}/admin/requests", params={"status": "many"}, headers=JSON
        ).status_code
        == 400
    )


def test_admin_request_pages_in_the_browser(
    server: GatewayServer, fakes: dict[str, FakeUpstream], tmp_path: Path
) -> None:
    user = f"browser-{secrets.token_hex(4)}"
    fakes["openai"].script(
        Reply.of_tool_calls(("helper", {"message": "Sub?"})), Reply.of_text("Done.")
    )
    fakes["anthropic"].script(Reply.of_text("Sub answer."))
    request_id = ask(server, "toolful", new_trace()[2], user=user).headers["x-request-id"]
    wait_for(
        lambda: (
            httpx.get(f"{server.url}/admin/requests/{request_id}", headers=JSON).status_code == 200
        ),
        "the request's record",
    )

    with chromium_page() as page:
        page.goto(f"{server.url}/admin/requests?user={user}")
        row = page.locator(f"tr[data-request-id='{request_id}']")
        assert "toolful" in row.inner_text()
        row.get_by_role("link").first.click()
        page.wait_for_url(f"**/admin/requests/{request_id}")
        bars = page.locator(".waterfall .span-row")
        names = bars.locator(".span-name").all_inner_texts()
        assert names[:2] == ["POST /v1/chat/completions", "invoke_agent toolful"]
        assert "execute_tool helper" in names and "invoke_agent helper" in names
        page.locator(".span-row", has_text="chat claude-helper").first.click()
        opened = page.locator("details[open] .span-attributes")
        assert "gen_ai.provider.name" in opened.inner_text()
        assert "anthropic" in opened.inner_text()
        shot(page, "request-waterfall")
