"""Hostile input on /v1: nothing a client or an upstream sends freezes the
server or produces a 500; every refusal is a 400 naming the field."""

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from tests.fakes.base import Reply
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.lagprobe import LAG_BOUND_SECONDS, probing
from tests.server import GatewayServer

CATASTROPHIC = {
    "type": "object",
    "properties": {"v": {"type": "string", "pattern": "^(a+)+$"}},
    "required": ["v"],
}
# Python's backtracking engine needs minutes for this reply against ^(a+)+$.
REDOS_REPLY = json.dumps({"v": "a" * 40 + "!"})


def chat(user_id: str, **fields: Any) -> dict[str, Any]:
    return {
        "model": "openai-agent",
        "messages": [{"role": "user", "content": "Hi"}],
        "safety_identifier": user_id,
        **fields,
    }


def schema_format(schema: dict[str, Any]) -> dict[str, Any]:
    return {"type": "json_schema", "json_schema": {"name": "reply", "schema": schema}}


def post(gateway: GatewayServer, body: Any, path: str = "/v1/chat/completions") -> httpx.Response:
    return httpx.post(f"{gateway.url}{path}", json=body, timeout=60)


def assert_400(response: httpx.Response, param: str) -> dict[str, Any]:
    assert response.status_code == 400, response.text
    error = response.json()["error"]
    assert set(error) == {"type", "message", "code", "param"}
    assert (error["type"], error["param"]) == ("invalid_request_error", param)
    return error


@pytest.mark.parametrize("stream", [False, True])
def test_redos_pattern_reply_does_not_block_the_loop(
    gateway: GatewayServer, openai_fake: OpenAIUpstream, user_id: str, stream: bool
) -> None:
    openai_fake.script(Reply.of_text(REDOS_REPLY), Reply.of_text('{"v": "aaa"}'))

    with probing(gateway.url) as probe:
        response = post(
            gateway, chat(user_id, response_format=schema_format(CATASTROPHIC), stream=stream)
        )

    assert response.status_code == 200, response.text
    assert '\\"aaa\\"' in response.text or '"aaa"' in response.text
    repair = openai_fake.requests[1].body["messages"][-1]["content"]
    assert "does not match '^(a+)+$'" in repair
    assert probe.polls > 0 and probe.failures == 0
    assert probe.longest < LAG_BOUND_SECONDS


@pytest.mark.parametrize("pattern", [r"^(a)\1$", "^(?=a)a$", "^(?<!b)a$"])
def test_pattern_re2_cannot_run_is_400_naming_response_format(
    gateway: GatewayServer, openai_fake: OpenAIUpstream, user_id: str, pattern: str
) -> None:
    schema = {"type": "object", "properties": {"v": {"type": "string", "pattern": pattern}}}

    response = post(gateway, chat(user_id, response_format=schema_format(schema)))

    error = assert_400(response, "response_format.json_schema.schema")
    assert "RE2" in error["message"] and "properties/v/pattern" in error["message"]
    assert openai_fake.requests == []


@pytest.mark.parametrize("name", ["enum", "const", "default", "examples"])
def test_pattern_under_a_property_named_like_a_keyword_is_checked_too(
    gateway: GatewayServer, openai_fake: OpenAIUpstream, user_id: str, name: str
) -> None:
    schema = {"type": "object", "properties": {name: {"type": "string", "pattern": "(a)\\1"}}}

    response = post(gateway, chat(user_id, response_format=schema_format(schema)))

    error = assert_400(response, "response_format.json_schema.schema")
    assert f"properties/{name}/pattern" in error["message"]
    assert openai_fake.requests == []


def test_pattern_property_re2_cannot_run_is_400_on_the_responses_api(
    gateway: GatewayServer, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    schema = {"type": "object", "patternProperties": {"^(?!x)": {"type": "string"}}}
    body = {
        "model": "openai-agent",
        "input": "Hi",
        "safety_identifier": user_id,
        "text": {"format": {"type": "json_schema", "name": "r", "schema": schema}},
    }

    error = assert_400(post(gateway, body, "/v1/responses"), "text.format.schema")
    assert "patternProperties" in error["message"]
    assert openai_fake.requests == []


def test_pattern_properties_and_additional_properties_run_on_re2(
    gateway: GatewayServer, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    schema = {
        "type": "object",
        "patternProperties": {"^(a+)+$": {"type": "integer"}},
        "additionalProperties": False,
    }
    hostile = json.dumps({"a" * 40 + "!": 1})
    openai_fake.script(Reply.of_text(hostile), Reply.of_text('{"aaa": 1}'))

    with probing(gateway.url) as probe:
        response = post(gateway, chat(user_id, response_format=schema_format(schema)))

    assert response.status_code == 200, response.text
    assert json.loads(response.json()["choices"][0]["message"]["content"]) == {"aaa": 1}
    repair = openai_fake.requests[1].body["messages"][-1]["content"]
    assert "Additional properties are not allowed" in repair
    assert probe.polls > 0 and probe.longest < LAG_BOUND_SECONDS


def raw_post(
    gateway: GatewayServer, text: str, path: str = "/v1/chat/completions"
) -> httpx.Response:
    """Post JSON text as written (``\\ud800`` escapes stay lone surrogates)."""
    return httpx.post(
        f"{gateway.url}{path}",
        content=text.encode(),
        headers={"Content-Type": "application/json"},
        timeout=60,
    )


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("tokens_per_hour", "9" * 5000),
        ("tokens_per_day", str(10**15 + 1)),
        ("tokens_per_month", "1" + "0" * 40),
    ],
)
def test_metadata_number_beyond_10_15_is_400_naming_the_key(
    gateway: GatewayServer, user_id: str, key: str, value: str
) -> None:
    error = assert_400(post(gateway, chat(user_id, metadata={key: value})), f"metadata.{key}")
    assert "10^15" in error["message"]


def test_metadata_number_of_10_15_is_accepted(gateway: GatewayServer, user_id: str) -> None:
    response = post(gateway, chat(user_id, metadata={"tokens_per_hour": str(10**15)}))
    assert response.status_code == 200, response.text


@pytest.mark.parametrize(
    "tag",
    ["en-" + "-".join(["abcdefgh"] * 8), "-".join(["a1b2"] * 20000), "x" * 65],
    ids=["long", "20000-subtags", "65-letters"],
)
def test_language_tag_over_64_characters_is_400(
    gateway: GatewayServer, user_id: str, tag: str
) -> None:
    error = assert_400(
        post(gateway, chat(user_id, metadata={"language": tag})), "metadata.language"
    )
    assert "64" in error["message"]


SURROGATE = "\\ud800"


@pytest.mark.parametrize(
    ("body", "param"),
    [
        (
            f'{{"model": "openai-agent", "safety_identifier": "u{SURROGATE}", '
            '"messages": [{"role": "user", "content": "Hi"}]}',
            "safety_identifier",
        ),
        (
            f'{{"model": "openai-agent", "user": "{SURROGATE}x", '
            '"messages": [{"role": "user", "content": "Hi"}]}',
            "user",
        ),
        (
            f'{{"model": "openai{SURROGATE}", "safety_identifier": "u", '
            '"messages": [{"role": "user", "content": "Hi"}]}',
            "model",
        ),
        (
            '{"model": "openai-agent", "safety_identifier": "u", '
            f'"messages": [{{"role": "user", "content": "Hi {SURROGATE}"}}]}}',
            "messages[0].content",
        ),
        (
            '{"model": "openai-agent", "safety_identifier": "u", "messages": [{"role": "user", '
            f'"content": [{{"type": "text", "text": "{SURROGATE}"}}]}}]}}',
            "messages[0].content[0].text",
        ),
        (
            '{"model": "openai-agent", "safety_identifier": "u", '
            '"messages": [{"role": "user", "content": "Hi"}], '
            f'"metadata": {{"k{SURROGATE}": "v"}}}}',
            "metadata",
        ),
    ],
    ids=["safety_identifier", "user", "model", "content", "content-part", "metadata-key"],
)
def test_lone_surrogate_in_a_string_is_400_naming_the_field(
    gateway: GatewayServer, openai_fake: OpenAIUpstream, body: str, param: str
) -> None:
    error = assert_400(raw_post(gateway, body), param)
    assert "surrogate" in error["message"]
    assert openai_fake.requests == []


def test_lone_surrogate_in_responses_input_is_400_naming_the_field(
    gateway: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    body = f'{{"model": "openai-agent", "safety_identifier": "u", "input": "Hi {SURROGATE}"}}'
    assert_400(raw_post(gateway, body, "/v1/responses"), "input")
    assert openai_fake.requests == []


def test_x_user_id_that_is_not_utf8_is_never_a_server_error(
    gateway: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    body = json.dumps({"model": "openai-agent", "messages": [{"role": "user", "content": "Hi"}]})
    response = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        content=body,
        headers=[("Content-Type", "application/json"), ("X-User-Id", b"u\xed\xa0\x80")],
    )
    assert response.status_code in (200, 400), response.text


def nested(depth: int) -> dict[str, Any]:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(depth - 1):
        schema = {"type": "object", "properties": {"a": schema}}
    return schema


def test_schema_nested_deeper_than_64_levels_is_400(
    gateway: GatewayServer, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    response = post(gateway, chat(user_id, response_format=schema_format(nested(150))))
    error = assert_400(response, "response_format.json_schema.schema")
    assert "64" in error["message"]
    tools = [{"type": "function", "function": {"name": "f", "parameters": nested(150)}}]
    assert_400(post(gateway, chat(user_id, tools=tools)), "tools[0].function.parameters")
    assert openai_fake.requests == []


def test_schema_nested_64_levels_is_accepted(
    gateway: GatewayServer, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    value: Any = "x"
    for _ in range(31):
        value = {"a": value}
    openai_fake.script(Reply.of_text(json.dumps(value)))
    response = post(gateway, chat(user_id, response_format=schema_format(nested(32))))
    assert response.status_code == 200, response.text
    assert len(openai_fake.requests) == 1


def test_deeply_nested_body_is_400(gateway: GatewayServer, user_id: str) -> None:
    deep = "[" * 100_000 + "]" * 100_000
    body = f'{{"model": "openai-agent", "safety_identifier": "{user_id}", "messages": {deep}}}'
    response = raw_post(gateway, body)
    assert response.status_code == 400, response.text
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_more_than_10000_messages_is_400(gateway: GatewayServer, user_id: str) -> None:
    messages = [{"role": "user", "content": "x"}] * 10_001
    error = assert_400(post(gateway, chat(user_id, messages=messages)), "messages")
    assert "10000" in error["message"] or "10,000" in error["message"]
    items = [{"role": "user", "content": "x"}] * 10_001
    body = {"model": "openai-agent", "safety_identifier": user_id, "input": items}
    assert_400(post(gateway, body, "/v1/responses"), "input")


@pytest.mark.parametrize("value", ["inf", "nan", "-5", "soon", "1e400", "-inf"])
def test_upstream_retry_after_that_is_not_finite_is_ignored(
    gateway: GatewayServer, openai_fake: OpenAIUpstream, user_id: str, value: str
) -> None:
    openai_fake.script(Reply.of_error(429, "Slow down", headers={"Retry-After": value}))
    response = post(gateway, chat(user_id))
    assert response.status_code == 429, response.text
    assert "retry-after" not in response.headers
    assert response.json()["error"]["code"] == "upstream_rate_limited"


@pytest.mark.parametrize(("value", "sent"), [("1e12", "86400"), ("90000", "86400"), ("2.5", "3")])
def test_upstream_retry_after_is_clamped_to_one_day(
    gateway: GatewayServer, openai_fake: OpenAIUpstream, user_id: str, value: str, sent: str
) -> None:
    openai_fake.script(Reply.of_error(429, "Slow down", headers={"Retry-After": value}))
    response = post(gateway, chat(user_id))
    assert response.status_code == 429, response.text
    assert response.headers["retry-after"] == sent


def function_tools(count: int) -> list[dict[str, Any]]:
    schema = {"type": "object", "properties": {"x": {"type": "string", "minLength": 1}}}
    return [
        {"type": "function", "function": {"name": f"tool_{index}", "parameters": schema}}
        for index in range(count)
    ]


type ToolBody = Callable[[str, list[dict[str, Any]]], dict[str, Any]]
ROUTES_WITH_TOOLS: dict[str, ToolBody] = {
    "/v1/chat/completions": lambda user, tools: chat(user, tools=tools),
    "/v1/responses": lambda user, tools: {
        "model": "openai-agent",
        "input": "Hi",
        "safety_identifier": user,
        "tools": [{"type": "function", **tool["function"]} for tool in tools],
    },
    "/v1/messages": lambda user, tools: {
        "model": "openai-agent",
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "Hi"}],
        "tools": [
            {"name": tool["function"]["name"], "input_schema": tool["function"]["parameters"]}
            for tool in tools
        ],
    },
    "/v1/messages/count_tokens": lambda user, tools: {
        "model": "openai-agent",
        "messages": [{"role": "user", "content": "Hi"}],
        "tools": [
            {"name": tool["function"]["name"], "input_schema": tool["function"]["parameters"]}
            for tool in tools
        ],
    },
}


@pytest.mark.parametrize("path", ROUTES_WITH_TOOLS)
def test_more_tools_than_limits_max_tools_is_400_before_any_is_read(
    gateway: GatewayServer, openai_fake: OpenAIUpstream, user_id: str, path: str
) -> None:
    body = ROUTES_WITH_TOOLS[path](user_id, function_tools(10_000))

    with probing(gateway.url) as probe:
        response = post(gateway, body, path)

    assert response.status_code == 400, response.text
    assert "at most 512 tool definitions (limits.max_tools)" in response.text
    assert probe.failures == 0  # /healthz answered all along
    assert openai_fake.requests == []


def test_a_long_tool_list_is_checked_off_the_event_loop(
    gateway: GatewayServer, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    tools = function_tools(512)
    tools[-1]["function"]["parameters"] = {"type": "object", "properties": {"x": {"type": 3}}}

    with probing(gateway.url) as probe:
        response = post(gateway, chat(user_id, tools=tools))

    error = assert_400(response, "tools[511].function.parameters")
    assert error["code"] == "invalid_tool"
    assert probe.failures == 0 and probe.longest < LAG_BOUND_SECONDS
    assert openai_fake.requests == []


@pytest.mark.parametrize(
    "path",
    [
        "/v1/chat/completions",
        "/v1/responses",
        "/v1/messages",
        "/v1/messages/count_tokens",
        "/v1/embeddings",
    ],
)
def test_a_body_over_a_mebibyte_nested_too_deep_is_400(
    gateway: GatewayServer, user_id: str, path: str
) -> None:
    deep = "[" * 600_000 + "]" * 600_000  # 1.2 MB: parsed off the event loop
    body = f'{{"model": "openai-agent", "safety_identifier": "{user_id}", "messages": {deep}}}'
    response = raw_post(gateway, body, path)
    assert response.status_code == 400, response.text
    assert response.headers["content-type"] == "application/json"


def test_count_tokens_refuses_a_lone_surrogate(
    gateway: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    body = '{"model": "openai-agent", "messages": [{"role": "user", "content": "a\\ud800b"}]}'
    response = raw_post(gateway, body, "/v1/messages/count_tokens")
    assert response.status_code == 400, response.text
    assert "surrogate" in response.json()["error"]["message"]
