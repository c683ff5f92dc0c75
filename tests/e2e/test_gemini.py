"""Google's Gemini API (``/v1beta``) in front of agents on every provider kind, through the
real server with the official ``google-genai`` SDK: generation, streams (SSE and the JSON
array), history, function calling both ways, structured output, token counts, embeddings,
the model list, Google's error shape, and aliases."""

import base64
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

from tests.fakes.base import FakeUpstream, Reply, fake_vector
from tests.fakes.gemini_upstream import thought_signature
from tests.server import GatewayServer
from tests.upstreams import FAKE_CLASSES, received, sent_tool_calls_and_results, shared_config

KINDS = list(FAKE_CLASSES)  # all six
FIXTURES = Path(__file__).parents[1] / "fixtures"
WEATHER = types.FunctionDeclaration(
    name="get_weather",
    description="Current weather of a city.",
    parameters=types.Schema(
        type=types.Type.OBJECT,
        properties={"city": types.Schema(type=types.Type.STRING)},
        required=["city"],
    ),
)
NO_AUTOMATIC_CALLS = types.AutomaticFunctionCallingConfig(disable=True)


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    aliases = (
        "aliases:\n"
        "  gemini-2.5-flash-lite: openai-agent\n"
        '  "gemini-3*": anthropic-agent\n'
        "  text-embedding-004: openai-embedder\n"
    )
    money = (
        "pricing:\n"
        '  "openai/openai-model-1": {input: 1.0, output: 2.0}\n'
        "budgets:\n"
        "  users: {frugal: {tokens_per_day: 10}}\n"
    )
    config = shared_config(upstreams) + aliases + money
    gateway = GatewayServer(tmp_path_factory.mktemp("gemini"), config).start()
    yield gateway
    gateway.stop()


def gemini(server: GatewayServer, user: str, version: str = "v1beta") -> genai.Client:
    """The SDK as Gemini CLI calls Google: ``/v1beta`` (the SDK's own default is ``v1``)."""
    options = types.HttpOptions(
        base_url=server.url, api_version=version, headers={"X-User-Id": user}
    )
    return genai.Client(api_key="any-key", http_options=options)


def replay(server: GatewayServer, fixture: str, method: str, user: str) -> httpx.Response:
    """A request Gemini CLI sent, kept in ``tests/fixtures``, sent again to ``method``."""
    captured = json.loads((FIXTURES / fixture).read_text())
    return httpx.post(
        f"{server.url}/v1beta/models/{method}",
        json=captured["body"],
        headers={**captured["headers"], "x-goog-api-key": "any", "X-User-Id": user},
        timeout=30,
    )


@pytest.mark.parametrize("kind", KINDS)
def test_content_is_generated_by_an_agent_of_every_kind_and_remembered(
    kind: str, server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(
        Reply.of_text("Hello, Ada.", prompt_tokens=20, completion_tokens=5), Reply.of_text("Ada.")
    )
    client = gemini(server, user_id)

    first = client.models.generate_content(
        model=f"{kind}-agent",
        contents="I am Ada.",
        config=types.GenerateContentConfig(system_instruction="Be brief.", temperature=0.2),
    )
    client.models.generate_content(model=f"{kind}-agent", contents="Who am I?")

    assert first.text == "Hello, Ada."
    assert first.candidates is not None and first.candidates[0].finish_reason == "STOP"
    usage = first.usage_metadata
    assert usage is not None
    assert (usage.prompt_token_count, usage.candidates_token_count) == (20, 5)
    assert usage.total_token_count == 25
    assert first.model_version and first.response_id
    asked = received(kind, fakes[kind].requests[0])
    assert "Be brief." in asked.system and f"the {kind} agent of ACME" in asked.system
    again = received(kind, fakes[kind].requests[1])
    assert again.turns[:2] == [("user", "I am Ada."), ("assistant", "Hello, Ada.")]


@pytest.mark.parametrize("kind", KINDS)
def test_the_model_version_is_the_upstream_model_streamed_or_not(
    kind: str, server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    """Cohere's reply names no model: the model the gateway asked for is the version."""
    fakes[kind].script(Reply.of_text("One."), Reply.of_text("Two."))
    client = gemini(server, user_id)

    whole = client.models.generate_content(model=f"{kind}-agent", contents="Hi")
    streamed = list(client.models.generate_content_stream(model=f"{kind}-agent", contents="Hi"))

    upstream_model = received(kind, fakes[kind].requests[0]).model
    assert whole.model_version == upstream_model
    assert streamed[-1].model_version == upstream_model


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini", "cohere"])
def test_a_stream_comes_as_server_sent_events(
    kind: str, server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(Reply.of_chunks("Hel", "lo ", "there."))

    client = gemini(server, user_id)  # kept: a client it no longer has is closed

    chunks = list(client.models.generate_content_stream(model=f"{kind}-agent", contents="Hi"))

    assert "".join(chunk.text or "" for chunk in chunks) == "Hello there."
    last = chunks[-1]
    assert last.candidates is not None and last.candidates[0].finish_reason == "STOP"
    assert last.usage_metadata is not None and last.usage_metadata.total_token_count == 18


@pytest.mark.parametrize("kind", ["gemini", "openai"])
def test_a_streamed_function_call_comes_whole_with_its_signature(
    kind: str, server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(Reply.of_tool_calls(("get_weather", {"city": "Oslo"})))
    client = gemini(server, user_id)
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[WEATHER])],
        automatic_function_calling=NO_AUTOMATIC_CALLS,
    )

    chunks = list(
        client.models.generate_content_stream(
            model=f"{kind}-agent", contents="Weather in Oslo?", config=config
        )
    )

    parts = [
        part
        for chunk in chunks
        for part in (chunk.candidates or [])[0].content.parts or []
        if part.function_call is not None
    ]
    assert [(part.function_call.name, part.function_call.args) for part in parts] == [
        ("get_weather", {"city": "Oslo"})
    ]
    signature = thought_signature(0).encode() if kind == "gemini" else None
    assert [part.thought_signature for part in parts] == [
        base64.b64decode(signature) if signature else None
    ]


def test_a_stream_without_alt_sse_is_one_json_array(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes["openai"].script(Reply.of_chunks("One ", "two."))

    response = httpx.post(
        f"{server.url}/v1beta/models/openai-agent:streamGenerateContent",
        json={"contents": [{"role": "user", "parts": [{"text": "Count."}]}]},
        headers={"X-User-Id": user_id},
        timeout=30,
    )

    assert response.headers["content-type"].startswith("application/json")
    chunks = response.json()
    texts = [
        part.get("text", "")
        for chunk in chunks
        for part in chunk["candidates"][0]["content"]["parts"]
    ]
    assert "".join(texts) == "One two."
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"


@pytest.mark.parametrize("kind", KINDS)
def test_function_calls_go_back_with_args_and_their_responses_reach_every_upstream(
    kind: str, server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(
        Reply.of_tool_calls(("get_weather", {"city": "Oslo"})), Reply.of_text("It is cold.")
    )
    client = gemini(server, user_id)
    config = types.GenerateContentConfig(
        tools=[types.Tool(function_declarations=[WEATHER])],
        automatic_function_calling=NO_AUTOMATIC_CALLS,
    )
    question = types.Content(role="user", parts=[types.Part(text="Weather in Oslo?")])

    first = client.models.generate_content(
        model=f"{kind}-agent", contents=[question], config=config
    )

    assert first.function_calls is not None
    (call,) = first.function_calls
    assert (call.name, call.args) == ("get_weather", {"city": "Oslo"})
    answer = types.Part(
        function_response=types.FunctionResponse(
            id=call.id, name="get_weather", response={"output": "-3 °C"}
        )
    )
    final = client.models.generate_content(
        model=f"{kind}-agent",
        contents=[
            question,
            first.candidates[0].content,
            types.Content(role="user", parts=[answer]),
        ],
        config=config,
    )

    assert final.text == "It is cold."
    calls, results = sent_tool_calls_and_results(kind, fakes[kind].last.body)
    assert [(name, arguments) for _, name, arguments, _ in calls] == [
        ("get_weather", {"city": "Oslo"})
    ]
    assert [text for _, text in results] == ["-3 °C"]
    if kind == "gemini":  # the upstream's own thought signature went there and back
        assert [signature for *_, signature in calls] == [thought_signature(0)]


def test_a_gemini_schema_asks_for_structured_output_on_any_provider(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    """Gemini's own schema dialect: upper-case types, ``propertyOrdering``."""
    fakes["anthropic"].script(Reply.of_text('{"model_choice": "pro"}'))
    schema = {
        "type": "OBJECT",
        "properties": {"model_choice": {"type": "STRING", "enum": ["flash", "pro"]}},
        "required": ["model_choice"],
        "propertyOrdering": ["model_choice"],
    }

    client = gemini(server, user_id)

    answer = client.models.generate_content(
        model="anthropic-agent",
        contents="Which model?",
        config=types.GenerateContentConfig(
            response_mime_type="application/json", response_schema=schema
        ),
    )

    assert json.loads(answer.text or "") == {"model_choice": "pro"}
    assert '"model_choice"' in received("anthropic", fakes["anthropic"].last).system


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_gemini_clis_first_request_is_served(
    kind: str, server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    """Gemini CLI 0.61's first request with ``-m`` as it sent it: a session context turn,
    15 function declarations with ``parametersJsonSchema``, ``thinkingConfig``, SSE."""
    fakes[kind].script(Reply.of_text("Ready."))

    response = replay(
        server,
        "gemini_cli_first_request.json",
        f"{kind}-agent:streamGenerateContent?alt=sse",
        user_id,
    )

    assert response.status_code == 200, response.text
    assert response.headers["content-type"].startswith("text/event-stream")
    chunks = [
        json.loads(line.removeprefix("data: "))
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]
    text = "".join(
        part.get("text", "")
        for chunk in chunks
        for part in chunk["candidates"][0]["content"]["parts"]
    )
    assert text == "Ready."
    assert chunks[-1]["candidates"][0]["finishReason"] == "STOP"
    sent = fakes[kind].last.body
    captured = json.loads((FIXTURES / "gemini_cli_first_request.json").read_text())
    declared = captured["body"]["tools"][0]["functionDeclarations"]
    if kind == "gemini":
        offered = sent["tools"][0]["functionDeclarations"]
        assert sent["generationConfig"]["thinkingConfig"] == {"includeThoughts": True}
    else:
        offered = [tool["function"] for tool in sent["tools"]]
        assert "thinkingConfig" not in json.dumps(sent)
    assert [tool["name"] for tool in offered] == [tool["name"] for tool in declared]
    assert "This is the Gemini CLI" in received(kind, fakes[kind].last).turns[0][1]


def test_gemini_clis_router_request_is_structured_output_through_an_alias(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    """Without ``-m``, Gemini CLI first asks ``gemini-3.5-flash-lite`` for a complexity
    score, with upper-case types in ``responseJsonSchema``."""
    score = {"complexity_reasoning": "One command.", "complexity_score": 5}
    fakes["anthropic"].script(Reply.of_text(json.dumps(score)))

    response = replay(
        server,
        "gemini_cli_router_request.json",
        "gemini-3.5-flash-lite:generateContent",
        user_id,
    )

    assert response.status_code == 200, response.text
    answer = response.json()
    assert json.loads(answer["candidates"][0]["content"]["parts"][0]["text"]) == score
    system = received("anthropic", fakes["anthropic"].last).system
    schema = json.loads(system.rsplit("\n", 1)[-1])  # the schema the reply must match
    assert schema["properties"]["complexity_score"]["type"] == "integer"


def test_thinking_and_safety_settings_reach_gemini_upstreams_only(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    config = types.GenerateContentConfig(
        thinking_config=types.ThinkingConfig(thinking_budget=2048, include_thoughts=False),
        safety_settings=[
            types.SafetySetting(
                category=types.HarmCategory.HARM_CATEGORY_HARASSMENT,
                threshold=types.HarmBlockThreshold.BLOCK_NONE,
            )
        ],
    )
    client = gemini(server, user_id)

    client.models.generate_content(model="gemini-agent", contents="Think.", config=config)
    client.models.generate_content(model="openai-agent", contents="Think.", config=config)

    sent = fakes["gemini"].last.body
    assert sent["generationConfig"]["thinkingConfig"]["thinkingBudget"] == 2048
    assert sent["safetySettings"][0]["threshold"] == "BLOCK_NONE"
    openai_sent = fakes["openai"].last.body
    assert "safetySettings" not in openai_sent
    assert openai_sent["reasoning_effort"] == "medium"  # the budget as an effort


def test_built_in_tools_are_left_out_and_named(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes["openai"].script(Reply.of_text("No search here."))
    body = {
        "contents": [{"role": "user", "parts": [{"text": "Search the web."}]}],
        "tools": [{"googleSearch": {}}, {"codeExecution": {}}],
    }

    response = httpx.post(
        f"{server.url}/v1beta/models/openai-agent:generateContent",
        json=body,
        headers={"X-User-Id": user_id},
        timeout=30,
    )

    assert response.status_code == 200, response.text
    assert response.headers["x-gateway-dropped-tools"] == "googleSearch, codeExecution"
    assert "tools" not in fakes["openai"].last.body


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
def test_tokens_are_counted_by_the_upstream_where_it_counts(
    kind: str, server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    client = gemini(server, "counter")

    counted = client.models.count_tokens(
        model=f"{kind}-agent", contents="How many tokens is this question?"
    )

    assert counted.total_tokens is not None and counted.total_tokens > 5
    asked = [recorded.path for recorded in fakes[kind].requests]
    if kind == "openai":
        assert asked == []  # estimated: OpenAI has no count
    else:
        assert any(path.endswith(("count_tokens", ":countTokens")) for path in asked)


# Fields of the wrong JSON type (the security probe's bodies): each a 400 naming the field.
F = {"functionDeclarations": [{"name": "f"}]}
WRONG_TYPES: dict[str, tuple[dict[str, Any], str]] = {
    "mode-object": ({"toolConfig": {"functionCallingConfig": {"mode": {}}}}, "mode"),
    "mode-list": ({"toolConfig": {"functionCallingConfig": {"mode": []}}}, "mode"),
    "declarations-number": ({"tools": [{"functionDeclarations": 3.5}]}, "functionDeclarations"),
    "declarations-boolean": ({"tools": [{"functionDeclarations": True}]}, "functionDeclarations"),
    "stop-string": ({"generationConfig": {"stopSequences": "STOP"}}, "stopSequences"),
    "allowed-string": (
        {"tools": [F], "toolConfig": {"functionCallingConfig": {"allowedFunctionNames": "f"}}},
        "allowedFunctionNames",
    ),
}
WRONG_TYPE_PARAMS = {
    "mode": "toolConfig.functionCallingConfig.mode",
    "functionDeclarations": "tools[0].functionDeclarations",
    "stopSequences": "generationConfig.stopSequences",
    "allowedFunctionNames": "toolConfig.functionCallingConfig.allowedFunctionNames",
}


@pytest.mark.parametrize(
    ("method", "wrapped"),
    [
        ("generateContent", False),
        ("streamGenerateContent?alt=sse", False),
        ("countTokens", False),
        ("countTokens", True),
    ],
    ids=["generate", "stream", "count", "count-whole"],
)
@pytest.mark.parametrize("case", list(WRONG_TYPES))
def test_a_field_of_the_wrong_json_type_is_a_400_naming_it(
    server: GatewayServer, fakes: dict[str, FakeUpstream], method: str, wrapped: bool, case: str
) -> None:
    fields, name = WRONG_TYPES[case]
    body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}], **fields}
    if wrapped:
        body = {"generateContentRequest": body}

    response = httpx.post(
        f"{server.url}/v1beta/models/openai-agent:{method}",
        json=body,
        headers={"X-User-Id": "typed"},
        timeout=30,
    )

    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (400, "INVALID_ARGUMENT")
    param = WRONG_TYPE_PARAMS[name]
    assert error["message"].startswith(f"generateContentRequest.{param}" if wrapped else param)
    assert fakes["openai"].requests == []


def test_count_tokens_refuses_a_lone_surrogate(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    response = httpx.post(
        f"{server.url}/v1beta/models/openai-agent:countTokens",
        content=b'{"contents": [{"parts": [{"text": "a\\ud800b"}]}]}',
        headers={"Content-Type": "application/json"},
        timeout=30,
    )

    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert error["status"] == "INVALID_ARGUMENT"
    assert error["message"].startswith("contents[0].parts[0].text contains a lone UTF-16 surrogate")


@pytest.mark.parametrize("embedder", ["openai-embedder", "gemini-embedder", "text-embedding-004"])
def test_contents_are_embedded_one_or_in_a_batch(
    embedder: str, server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    client = gemini(server, user_id)

    one = client.models.embed_content(model=embedder, contents="billing team")
    several = client.models.embed_content(
        model=embedder,
        contents=["billing team", "pasta recipe"],
        config=types.EmbedContentConfig(output_dimensionality=8, task_type="RETRIEVAL_QUERY"),
    )

    assert one.embeddings is not None and several.embeddings is not None
    assert one.embeddings[0].values == pytest.approx(fake_vector("billing team"))
    assert [item.values for item in several.embeddings] == [
        pytest.approx(fake_vector("billing team", 8)),
        pytest.approx(fake_vector("pasta recipe", 8)),
    ]


def test_the_model_list_shows_agents_and_embedders_not_aliases(server: GatewayServer) -> None:
    client = gemini(server, "lister")

    models = client.models.list(config={"query_base": True})  # the base models, not tuned ones

    listed = {model.name: model.supported_actions for model in models}

    assert listed["models/openai-agent"] == [
        "generateContent",
        "streamGenerateContent",
        "countTokens",
    ]
    assert listed["models/gemini-embedder"] == ["embedContent", "batchEmbedContents"]
    assert "models/gemini-2.5-flash-lite" not in listed
    one = client.models.get(model="cohere-agent")
    assert one.name == "models/cohere-agent"


def test_an_alias_answers_under_the_name_sent_with_its_own_history(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    """Gemini CLI's side-task model (flash-lite) and its main model (a gemini-3 prefix)
    served by agents; history is kept under the name the client sent."""
    fakes["openai"].script(Reply.of_text("Routed."), Reply.of_text("Again."))
    fakes["anthropic"].script(Reply.of_text("Pro."))
    client = gemini(server, user_id)

    lite = client.models.generate_content(model="gemini-2.5-flash-lite", contents="Route me.")
    pro = client.models.generate_content(model="gemini-3.1-pro-preview", contents="Think hard.")
    client.models.generate_content(model="gemini-2.5-flash-lite", contents="And again.")

    assert (lite.text, pro.text) == ("Routed.", "Pro.")
    turns = received("openai", fakes["openai"].last).turns
    assert turns[:2] == [("user", "Route me."), ("assistant", "Routed.")]
    assert all("Think hard." not in text for _, text in turns)
    chat = httpx.post(
        f"{server.url}/v1/chat/completions",
        json={
            "model": "gemini-3-flash",
            "messages": [{"role": "user", "content": "Hi"}],
            "user": user_id,
        },
        timeout=30,
    )
    assert chat.status_code == 200 and chat.json()["model"] == "gemini-3-flash"


@pytest.mark.parametrize(
    ("path", "body", "status", "code"),
    [
        (
            "/v1beta/models/nobody:generateContent",
            {"contents": [{"parts": [{"text": "x"}]}]},
            404,
            "NOT_FOUND",
        ),
        ("/v1beta/models/openai-agent:generateContent", {"contents": []}, 400, "INVALID_ARGUMENT"),
        (
            "/v1beta/models/openai-agent:generateContent",
            {"contents": [{"role": "bot", "parts": []}]},
            400,
            "INVALID_ARGUMENT",
        ),
        (
            "/v1beta/models/openai-agent:generateContent",
            {"contents": [{"parts": [{"text": "x"}]}], "generationConfig": {"candidateCount": 2}},
            400,
            "INVALID_ARGUMENT",
        ),
        (
            "/v1beta/models/openai-embedder:embedContent",
            {"content": {"parts": []}},
            400,
            "INVALID_ARGUMENT",
        ),
        ("/v1beta/nothing/here", {}, 404, "NOT_FOUND"),
        ("/v1beta/models/openai-agent:generateContent", [], 400, "INVALID_ARGUMENT"),
    ],
    ids=[
        "unknown-model",
        "no-contents",
        "bad-role",
        "candidates",
        "empty-embed",
        "route",
        "not-an-object",
    ],
)
def test_failures_are_in_googles_shape(
    server: GatewayServer, path: str, body: Any, status: int, code: str
) -> None:
    response = httpx.post(f"{server.url}{path}", json=body, headers={"X-User-Id": "u"}, timeout=30)

    assert response.status_code == status, response.text
    error = response.json()["error"]
    assert (error["code"], error["status"]) == (status, code)
    assert error["message"]


def test_the_methods_are_served_under_v1_too(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes["openai"].script(Reply.of_text("Also here."))
    client = gemini(server, user_id, version="v1")

    assert client.models.generate_content(model="openai-agent", contents="Hi").text == "Also here."
    assert httpx.get(f"{server.url}/v1/models/openai-agent").json()["object"] == "model"


def test_an_upstream_failure_is_a_google_error(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes["openai"].script(Reply.of_error(429, "Slow down", headers={"Retry-After": "7"}))

    client = gemini(server, user_id)

    with pytest.raises(genai_errors.APIError) as raised:
        client.models.generate_content(model="openai-agent", contents="Hi")

    assert raised.value.code == 429 and raised.value.status == "RESOURCE_EXHAUSTED"


def test_cost_is_in_the_usage_and_an_experiment_answers(
    server: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    """The fake counts 11 prompt and 7 completion tokens: 11 at $1 and 7 at $2 per million."""
    fakes["openai"].script(Reply.of_text("Priced."), Reply.of_text("Routed."))

    priced = httpx.post(
        f"{server.url}/v1beta/models/openai-agent:generateContent",
        json={"contents": [{"parts": [{"text": "Hi"}]}]},
        headers={"X-User-Id": user_id},
        timeout=30,
    )
    client = gemini(server, user_id)  # kept: a client it no longer has is closed
    routed = client.models.generate_content(model="openai-experiment", contents="Hi")

    usage = priced.json()["usageMetadata"]
    assert (usage["promptTokenCount"], usage["candidatesTokenCount"]) == (11, 7)
    assert usage["cost"] == pytest.approx(25e-6)
    assert routed.text == "Routed."
    assert received("openai", fakes["openai"].last).model == "openai-model-1"


def test_a_spent_budget_is_resource_exhausted_with_retry_after(
    server: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    """The user ``frugal`` may use 10 tokens a day: the first ask fits, its answer uses 18."""
    fakes["openai"].script(Reply.of_text("Once."))
    body = {"contents": [{"parts": [{"text": "Hi"}]}]}
    url = f"{server.url}/v1beta/models/openai-agent:generateContent"
    headers = {"X-User-Id": "frugal"}

    first = httpx.post(url, json=body, headers=headers, timeout=30)
    second = httpx.post(url, json=body, headers=headers, timeout=30)

    assert first.status_code == 200, first.text
    assert second.status_code == 429, second.text
    error = second.json()["error"]
    assert error["status"] == "RESOURCE_EXHAUSTED"
    wait = int(second.headers["Retry-After"])
    assert wait > 0
    retry_info = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": f"{wait}s"}
    assert error["details"] == [retry_info]
    assert second.headers["x-should-retry"] == "false"
    assert len(fakes["openai"].requests) == 1
