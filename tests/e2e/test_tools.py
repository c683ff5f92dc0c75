"""Tools in both directions, through the real server.

Client tools reach each provider in its own encoding and the model's calls come back in
the OpenAI shape; the agents' own tools (a real MCP server over stdio and one over
Streamable HTTP, and subagents) are run by the gateway in its tool loop.
"""

import json
import sqlite3
import sys
import time
from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest
from openai.types.chat import ChatCompletionMessage, ChatCompletionMessageParam

from tests.fakes.base import FakeUpstream, Reply
from tests.fakes.gemini_upstream import thought_signature
from tests.mcp_servers import GREETER, http_greeter, start_http_greeter
from tests.polling import wait_for
from tests.server import GatewayServer, free_port
from tests.upstreams import FAKE_CLASSES, api_key_of, fake_base_url, sent_tool_calls_and_results

KINDS = list(FAKE_CLASSES)
JSON = {"Accept": "application/json"}
WEATHER: dict[str, Any] = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Current weather of a city.",
        "parameters": {
            "type": "object",
            "properties": {"city": {"type": "string"}},
            "required": ["city"],
        },
    },
}
# The names each provider kind accepts for the gateway's dotted tool names.
SAFE = {kind: {"helper.v2": "helper_v2", "files.read": "files_read"} for kind in KINDS}
SAFE["gemini"] = {"helper.v2": "helper.v2", "files.read": "files.read"}


def native_tool_names(kind: str, body: dict[str, Any]) -> list[str]:
    if kind == "anthropic":
        return [tool["name"] for tool in body.get("tools", [])]
    if kind == "gemini":
        return [d["name"] for tools in body.get("tools", []) for d in tools["functionDeclarations"]]
    return [tool["function"]["name"] for tool in body.get("tools", [])]


# ---- client tools, on the session gateway ----------------------------------------------


@pytest.mark.parametrize("kind", KINDS)
def test_client_tool_call_comes_back_in_openai_shape(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(Reply.of_tool_calls(("get_weather", {"city": "Paris"})))

    completion = client.chat.completions.create(
        model=f"{kind}-agent",
        messages=[{"role": "user", "content": "Weather in Paris?"}],
        tools=[WEATHER],
        tool_choice="required",
        safety_identifier=user_id,
    )

    choice = completion.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.type == "function" and call.id
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        {"city": "Paris"},
    )
    assert native_tool_names(kind, fakes[kind].last.body) == ["get_weather"]
    assert completion.usage.total_tokens == 18


@pytest.mark.parametrize("kind", KINDS)
def test_streamed_client_tool_call_arrives_in_fragments(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(
        Reply.of_tool_calls(("get_weather", {"city": "Oslo"}), ("get_weather", {"city": "Rome"}))
    )

    chunks = list(
        client.chat.completions.create(
            model=f"{kind}-agent",
            messages=[{"role": "user", "content": "Weather in Oslo and Rome?"}],
            tools=[WEATHER],
            stream=True,
            stream_options={"include_usage": True},
            safety_identifier=user_id,
        )
    )

    calls: dict[int, dict[str, Any]] = {}
    for chunk in chunks:
        for delta in (chunk.choices[0].delta.tool_calls or []) if chunk.choices else []:
            call = calls.setdefault(delta.index, {"id": None, "name": None, "arguments": ""})
            call["id"] = call["id"] or delta.id
            call["name"] = call["name"] or (delta.function.name if delta.function else None)
            call["arguments"] += (delta.function.arguments or "") if delta.function else ""
    assert [(c["name"], json.loads(c["arguments"])) for _, c in sorted(calls.items())] == [
        ("get_weather", {"city": "Oslo"}),
        ("get_weather", {"city": "Rome"}),
    ]
    assert all(call["id"] for call in calls.values())
    finishes = [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices]
    assert finishes[-1] == "tool_calls"
    assert chunks[-1].usage.total_tokens == 18


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("kind", KINDS)
def test_tool_results_go_back_to_the_provider_in_its_format(
    kind: str, stream: bool, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fake = fakes[kind]
    fake.script(
        Reply.of_tool_calls(("get_weather", {"city": "Paris"})), Reply.of_text("It is 21 °C.")
    )
    question = {"role": "user", "content": "Weather in Paris?"}
    assistant: ChatCompletionMessage
    if stream:
        with client.chat.completions.stream(
            model=f"{kind}-agent", messages=[question], tools=[WEATHER], safety_identifier=user_id
        ) as events:
            assistant = events.get_final_completion().choices[0].message
    else:
        assistant = (
            client.chat.completions.create(
                model=f"{kind}-agent",
                messages=[question],
                tools=[WEATHER],
                safety_identifier=user_id,
            )
            .choices[0]
            .message
        )
    call = assistant.tool_calls[0]
    sent_back = {
        "role": "assistant",
        "content": assistant.content,
        "tool_calls": [
            {"id": c.id, "type": "function", "function": c.function.model_dump()}
            for c in assistant.tool_calls
        ],
    }

    final = client.chat.completions.create(
        model=f"{kind}-agent",
        messages=[
            question,
            sent_back,
            {"role": "tool", "tool_call_id": call.id, "content": '{"celsius": 21}'},
        ],
        tools=[WEATHER],
        safety_identifier=user_id,
    )

    assert final.choices[0].message.content == "It is 21 °C."
    assert final.choices[0].finish_reason == "stop"
    calls, results = sent_tool_calls_and_results(kind, fake.last.body)
    # Gemini's thought signature has no place in the OpenAI shape: the gateway kept it.
    signature = thought_signature(0) if kind == "gemini" else None
    assert calls == [(call.id, "get_weather", {"city": "Paris"}, signature)]
    expected = '{"celsius": 21}' if kind != "gemini" else json.dumps({"celsius": 21})
    assert results == [(call.id, expected)]


@pytest.mark.parametrize(
    ("change", "param", "code"),
    [
        ({"tools": [{"type": "web_search"}]}, "tools[0].type", "unsupported_tool_type"),
        (
            {"tools": [{"type": "function", "function": {"name": "f", "parameters": {"type": 5}}}]},
            "tools[0].function.parameters",
            "invalid_tool",
        ),
        (
            {"tools": [WEATHER], "tool_choice": {"type": "function", "function": {"name": "nope"}}},
            "tool_choice",
            "invalid_tool_choice",
        ),
        ({"tools": [WEATHER], "tool_choice": "sometimes"}, "tool_choice", "invalid_tool_choice"),
        ({"tool_choice": "required"}, "tool_choice", "invalid_tool_choice"),
        (
            {
                "tools": [
                    {
                        "type": "function",
                        "function": {"name": "f", "parameters": {"type": "string"}},
                    }
                ]
            },
            "tools[0].function.parameters",
            "invalid_tool",
        ),
        (
            {
                "messages": [
                    {"role": "user", "content": "Hi"},
                    {"role": "tool", "tool_call_id": "call_nowhere", "content": "21"},
                ]
            },
            "messages[1].tool_call_id",
            "unknown_tool_call",
        ),
    ],
    ids=[
        "other-type",
        "bad-schema",
        "unknown-choice",
        "bad-choice",
        "required-without-tools",
        "not-an-object-schema",
        "orphan-result",
    ],
)
def test_bad_tool_input_is_400_naming_the_field(
    gateway: GatewayServer,
    openai_fake: FakeUpstream,
    change: dict[str, Any],
    param: str,
    code: str,
) -> None:
    body = {"model": "openai-agent", "messages": [{"role": "user", "content": "Hi"}], "user": "u"}
    response = httpx.post(f"{gateway.url}/v1/chat/completions", json={**body, **change})

    assert response.status_code == 400
    assert response.json()["error"]["param"] == param
    assert response.json()["error"]["code"] == code
    assert openai_fake.requests == []


THINKING = {"type": "thinking", "thinking": "Oslo needs a lookup.", "signature": ""}


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
def test_anthropic_thinking_goes_back_with_a_client_tool_round(
    stream: bool, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fake = fakes["anthropic"]
    fake.script(
        Reply.of_tool_calls(("get_weather", {"city": "Oslo"}), thinking=THINKING["thinking"]),
        Reply.of_text("Cold in Oslo."),
    )
    question: list[ChatCompletionMessageParam] = [{"role": "user", "content": "Weather in Oslo?"}]
    options: dict[str, Any] = {
        "model": "anthropic-agent",
        "tools": [WEATHER],
        "reasoning_effort": "medium",
        "temperature": 0.3,
        "top_p": 0.5,
        "safety_identifier": user_id,
    }

    if stream:
        chunks = list(client.chat.completions.create(messages=question, stream=True, **options))
        call_id = next(
            c.choices[0].delta.tool_calls[0].id for c in chunks if c.choices[0].delta.tool_calls
        )
        arguments = '{"city": "Oslo"}'
    else:
        first = client.chat.completions.create(messages=question, **options)
        call_id = first.choices[0].message.tool_calls[0].id
        arguments = first.choices[0].message.tool_calls[0].function.arguments
    call = {
        "id": call_id,
        "type": "function",
        "function": {"name": "get_weather", "arguments": arguments},
    }
    final = client.chat.completions.create(
        messages=[
            *question,
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": call_id, "content": "-3 °C"},
        ],
        **options,
    )

    assert final.choices[0].message.content == "Cold in Oslo."
    first_body, follow_up = fake.requests[0].body, fake.last.body
    assert first_body["thinking"]["type"] == "enabled"
    assert "temperature" not in first_body and "top_p" not in first_body
    sent_back = follow_up["messages"][1]["content"][0]
    assert sent_back["type"] == "thinking" and sent_back["thinking"] == THINKING["thinking"]
    assert follow_up["thinking"]["type"] == "enabled"


# ---- the agents' own tools, on a gateway with MCP servers and subagents -------------------


@pytest.fixture(scope="module")
def web_greeter() -> Iterator[int]:
    with http_greeter(free_port()) as port:
        yield port


@pytest.fixture(scope="module")
def late_port() -> int:
    """A port where an MCP server comes up only during a test."""
    return free_port()


def tools_config(upstreams: dict[str, FakeUpstream], web_port: int, late_port: int) -> str:
    lines = ["default_user_id: tools-user", "providers:"]
    for kind, fake in upstreams.items():
        lines.append(
            f"  {kind}: {{api_key: {api_key_of(kind)}, base_url: '{fake_base_url(fake)}', timeout: 10}}"
        )
    lines += [
        "mcp:",
        f"  local: {{transport: stdio, command: '{sys.executable}', args: ['{GREETER}']}}",
        f"  web: {{transport: http, url: 'http://127.0.0.1:{web_port}/mcp'}}",
        f"  late: {{transport: http, url: 'http://127.0.0.1:{late_port}/mcp'}}",
        "agents:",
        "  - {name: helper.v2, provider: openai, model: helper-model, preamble: You help., purpose: Answers sub-questions.}",
        "  - {name: late-agent, provider: openai, model: m, mcp_tools: [{server: late}]}",
    ]
    for kind in upstreams:
        lines += [
            f"  - name: {kind}-tools",
            f"    provider: {kind}",
            f"    model: {kind}-model-1",
            "    preamble: You use tools.",
            "    mcp_tools:",
            "      - {server: local, only: [add, files.read, explode]}",
            "      - {server: web, only: [say_hello]}",
            "    subagents: [helper.v2]",
        ]
    for level in range(6):
        below = f", subagents: [level{level + 1}]" if level < 5 else ""
        lines.append(f"  - {{name: level{level}, provider: openai, model: level-{level}{below}}}")
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="module")
def tools_gateway(
    tmp_path_factory: pytest.TempPathFactory,
    upstreams: dict[str, FakeUpstream],
    web_greeter: int,
    late_port: int,
) -> Iterator[GatewayServer]:
    text = tools_config(upstreams, web_greeter, late_port)
    server = GatewayServer(tmp_path_factory.mktemp("tools"), text).start()
    wait_until_connected(server, "local", "web")
    yield server
    server.stop()


def mcp_states(server: GatewayServer) -> dict[str, Any]:
    return {
        name: httpx.get(f"{server.url}/admin/mcp/{name}/state", headers=JSON).json()
        for name in ("local", "web", "late")
    }


def wait_until_connected(server: GatewayServer, *names: str, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        states = mcp_states(server)
        if all(states[name]["state"] == "connected" for name in names):
            return
        time.sleep(0.2)
    raise AssertionError(f"MCP servers not connected: {mcp_states(server)}")


@pytest.fixture
def agent_client(tools_gateway: GatewayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{tools_gateway.url}/v1", api_key="x", max_retries=0)


def ask(client: openai.OpenAI, model: str, text: str, **extra: Any) -> Any:
    return client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": text}], **extra
    )


def ask_streamed(client: openai.OpenAI, model: str, text: str, **extra: Any) -> Any:
    """The streamed answer, put together by the SDK as the completion it amounts to."""
    with client.chat.completions.stream(
        model=model,
        messages=[{"role": "user", "content": text}],
        stream_options={"include_usage": True},
        **extra,
    ) as events:
        return events.get_final_completion()


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("kind", KINDS)
def test_agent_runs_mcp_tools_of_both_transports_in_its_loop(
    kind: str, stream: bool, agent_client: openai.OpenAI, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes[kind]
    fake.script(
        Reply.of_tool_calls(("add", {"a": 2, "b": 3}), ("say_hello", {"name": "Ana"})),
        Reply.of_tool_calls((SAFE[kind]["files.read"], {"path": "notes.txt"})),
        Reply.of_text("Done: 5, greeted, read."),
    )

    completion = (ask_streamed if stream else ask)(
        agent_client, f"{kind}-tools", "Add, greet and read."
    )

    assert completion.choices[0].message.content == "Done: 5, greeted, read."
    assert not completion.choices[0].message.tool_calls
    assert completion.usage.total_tokens == 3 * 18
    offered = native_tool_names(kind, fake.requests[0].body)
    assert offered == [
        "add",
        SAFE[kind]["files.read"],
        "explode",
        "say_hello",
        SAFE[kind]["helper.v2"],
    ]
    _, results = sent_tool_calls_and_results(kind, fake.last.body)
    assert [text for _, text in results] == ["5", "Hello, Ana!", "contents of notes.txt"]


def test_anthropic_thinking_goes_back_in_the_agents_own_tool_round(
    agent_client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fake = fakes["anthropic"]
    fake.script(
        Reply.of_tool_calls(("add", {"a": 2, "b": 3}), thinking="Add them."),
        Reply.of_text("5."),
    )

    completion = ask(
        agent_client,
        "anthropic-tools",
        "2+3?",
        reasoning_effort="low",
        top_p=0.5,
        safety_identifier=user_id,
    )

    assert completion.choices[0].message.content == "5."
    (assistant,) = [m for m in fake.last.body["messages"] if m["role"] == "assistant"]
    assert [block["type"] for block in assistant["content"]] == ["thinking", "tool_use"]
    assert assistant["content"][0]["thinking"] == "Add them."


def test_x_user_id_names_the_user_before_default_user_id(
    tools_gateway: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    body = {"model": "helper.v2", "messages": [{"role": "user", "content": "Who am I?"}]}
    url = f"{tools_gateway.url}/v1/chat/completions"

    httpx.post(url, json=body, headers={"X-User-Id": user_id})
    httpx.post(url, json=body)

    def billed() -> list[tuple[str]]:
        with sqlite3.connect(tools_gateway.workdir / "gateway.sqlite3") as database:
            query = (
                "SELECT user_id FROM inference_ledgerentry WHERE agent = 'helper.v2' ORDER BY id"
            )
            return database.execute(query).fetchall()

    # Ledger rows of turns nothing later reads are written behind their replies.
    wait_for(lambda: billed()[-2:] == [(user_id,), ("tools-user",)], "both turns billed")


def test_mcp_tool_error_goes_back_to_the_model(
    agent_client: openai.OpenAI, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes["openai"]
    fake.script(Reply.of_tool_calls(("explode", {"reason": "test"})), Reply.of_text("It failed."))

    completion = ask(agent_client, "openai-tools", "Try it.")

    assert completion.choices[0].message.content == "It failed."
    _, results = sent_tool_calls_and_results("openai", fake.last.body)
    assert results[0][1].startswith("Error: ") and "exploded: test" in results[0][1]


@pytest.mark.parametrize("stream", [False, True], ids=["whole", "streamed"])
@pytest.mark.parametrize("kind", KINDS)
def test_subagent_answers_as_a_tool_in_a_fresh_conversation(
    kind: str, stream: bool, agent_client: openai.OpenAI, fakes: dict[str, FakeUpstream]
) -> None:
    fakes[kind].script(Reply.of_tool_calls((SAFE[kind]["helper.v2"], {"message": "What is 2+2?"})))
    fakes["openai"].script(Reply.of_text("4", prompt_tokens=5, completion_tokens=1))
    fakes[kind].script(Reply.of_text("The helper says 4."))

    completion = (ask_streamed if stream else ask)(
        agent_client, f"{kind}-tools", "Ask the helper.", safety_identifier="sub-user"
    )

    assert completion.choices[0].message.content == "The helper says 4."
    assert completion.usage.total_tokens == 18 + 6 + 18  # the subagent's call is billed too
    helper_call = next(r for r in fakes["openai"].requests if r.body["model"] == "helper-model")
    assert helper_call.body["messages"] == [
        {"role": "system", "content": "You help."},
        {"role": "user", "content": "What is 2+2?"},
    ]
    offered = next(
        tool
        for tool in fakes[kind].requests[0].body.get("tools", [])
        if "helper" in json.dumps(tool)
    )
    assert "Answers sub-questions." in json.dumps(offered)
    _, results = sent_tool_calls_and_results(kind, fakes[kind].last.body)
    assert results[0][1] == "4"


def test_required_tool_choice_binds_the_first_round_only(
    agent_client: openai.OpenAI, fakes: dict[str, FakeUpstream]
) -> None:
    fakes["openai"].script(
        Reply.of_tool_calls(("add", {"a": 1, "b": 1})), Reply.of_text("It is 2.")
    )

    completion = ask(agent_client, "openai-tools", "1+1?", tool_choice="required")

    assert completion.choices[0].message.content == "It is 2."
    first, second = fakes["openai"].requests
    # After its first call the model must be free to answer, or the loop never ends.
    assert (first.body.get("tool_choice"), second.body.get("tool_choice")) == ("required", None)


def test_subagents_nest_at_most_four_levels(
    agent_client: openai.OpenAI, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes["openai"]
    fake.script(
        *[Reply.of_tool_calls((f"level{level + 1}", {"message": "deeper"})) for level in range(5)],
        *[Reply.of_text(str(level)) for level in (4, 3, 2, 1, 0)],
    )

    completion = ask(agent_client, "level0", "Go deep.")

    assert completion.choices[0].message.content == "0"
    models = [request.body["model"] for request in fake.requests]
    assert "level-5" not in models
    assert models == [f"level-{n}" for n in (0, 1, 2, 3, 4, 4, 3, 2, 1, 0)]
    refused = fake.requests[5].body["messages"][-1]
    assert refused["role"] == "tool"
    assert "subagents may nest at most 4 levels deep" in refused["content"]


def test_tool_loop_stops_after_eight_rounds_with_502(
    tools_gateway: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    fakes["openai"].script(*[Reply.of_tool_calls(("add", {"a": 1, "b": 1}))] * 9)

    response = httpx.post(
        f"{tools_gateway.url}/v1/chat/completions",
        json={"model": "openai-tools", "messages": [{"role": "user", "content": "Loop."}]},
        timeout=30,
    )

    assert response.status_code == 502
    error = response.json()["error"]
    assert error["code"] == "tool_loop_limit" and "8 rounds" in error["message"]
    assert len(fakes["openai"].requests) == 9


@pytest.mark.parametrize("kind", KINDS)
def test_round_with_agent_and_client_calls_returns_only_the_clients(
    kind: str, agent_client: openai.OpenAI, fakes: dict[str, FakeUpstream]
) -> None:
    fake = fakes[kind]
    fake.script(
        Reply.of_tool_calls(("add", {"a": 20, "b": 1}), ("get_weather", {"city": "Paris"})),
        Reply.of_text("21 and sunny."),
    )
    question = {"role": "user", "content": "Add and weather."}
    user = f"mixed-{kind}"
    first = agent_client.chat.completions.create(
        model=f"{kind}-tools", messages=[question], tools=[WEATHER], safety_identifier=user
    )
    (call,) = first.choices[0].message.tool_calls
    assert call.function.name == "get_weather"

    final = agent_client.chat.completions.create(
        model=f"{kind}-tools",
        messages=[
            question,
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": call.id, "content": "sunny"},
        ],
        tools=[WEATHER],
        safety_identifier=user,
    )

    assert final.choices[0].message.content == "21 and sunny."
    calls, results = sent_tool_calls_and_results(kind, fake.last.body)
    assert [c[1] for c in calls] == ["add", "get_weather"]  # the round, whole again
    assert [text for _, text in results] == ["21", "sunny"]  # the gateway's result first


def test_streaming_client_sees_only_the_final_answer(
    agent_client: openai.OpenAI, fakes: dict[str, FakeUpstream]
) -> None:
    fakes["anthropic"].script(
        Reply.of_chunks(
            "Let me ", "add.", tool_calls=(("add", {"a": 1, "b": 2}),), finish_reason="tool_calls"
        ),
        Reply.of_chunks("The sum ", "is 3."),
    )

    chunks = list(ask(agent_client, "anthropic-tools", "Add.", stream=True))

    text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    assert text == "The sum is 3."
    assert not any(c.choices[0].delta.tool_calls for c in chunks if c.choices)
    assert chunks[-1].choices[0].finish_reason == "stop"


def test_client_tool_named_like_an_agent_tool_is_400(tools_gateway: GatewayServer) -> None:
    tool = {**WEATHER, "function": {**WEATHER["function"], "name": "add"}}
    response = httpx.post(
        f"{tools_gateway.url}/v1/chat/completions",
        json={
            "model": "openai-tools",
            "messages": [{"role": "user", "content": "x"}],
            "tools": [tool],
        },
    )

    assert response.status_code == 400
    assert response.json()["error"]["param"] == "tools"
    assert "agent's own tools" in response.json()["error"]["message"]


def test_mcp_server_down_at_start_answers_502_until_it_comes_up(
    tools_gateway: GatewayServer, fakes: dict[str, FakeUpstream], late_port: int
) -> None:
    url = f"{tools_gateway.url}/v1/chat/completions"
    body = {"model": "late-agent", "messages": [{"role": "user", "content": "Hello?"}]}

    refused = httpx.post(url, json=body, timeout=30)
    assert refused.status_code == 502
    assert refused.json()["error"]["code"] == "mcp_unavailable"
    assert "MCP server 'late' is not available" in refused.json()["error"]["message"]
    state = mcp_states(tools_gateway)["late"]
    assert state["state"] == "unavailable" and state["last_error"]

    process = start_http_greeter(late_port)
    try:
        # Waiting out the backoff could take 30 s; a reload of the config retries at once.
        with tools_gateway.config_path.open("a") as config:
            config.write("# the late server is up\n")
        wait_until_connected(tools_gateway, "late", seconds=10)
        answered = httpx.post(url, json=body, timeout=30)
        assert answered.status_code == 200
        assert native_tool_names("openai", fakes["openai"].last.body) == [
            "say_hello", "add", "files_read", "trace_header", "explode",
        ]  # fmt: skip
    finally:
        process.terminate()
        process.wait()


def test_admin_shows_each_mcp_servers_state(tools_gateway: GatewayServer) -> None:
    states = mcp_states(tools_gateway)
    page = httpx.get(f"{tools_gateway.url}/admin/mcp", headers={"Accept": "text/html"}).text

    assert states["local"]["state"] == "connected"
    assert states["local"]["tools"] == ["say_hello", "add", "files.read", "trace_header", "explode"]
    assert states["web"]["transport"] == "http"
    assert "connected (5 tools)" in page


def test_structured_output_leaves_a_tool_call_reply_as_it_is(
    client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes["cohere"].script(Reply.of_tool_calls(("get_weather", {"city": "Lima"})))
    schema = {
        "type": "object",
        "properties": {"celsius": {"type": "integer"}},
        "required": ["celsius"],
    }

    completion = client.chat.completions.create(
        model="cohere-agent",
        messages=[{"role": "user", "content": "Weather in Lima as JSON?"}],
        tools=[WEATHER],
        response_format={"type": "json_schema", "json_schema": {"name": "w", "schema": schema}},
        safety_identifier=user_id,
    )

    assert completion.choices[0].finish_reason == "tool_calls"
    assert completion.choices[0].message.tool_calls[0].function.name == "get_weather"
    assert len(fakes["cohere"].requests) == 1  # no repair round for a tool call
