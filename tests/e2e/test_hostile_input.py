"""Hostile input on /v1 (DESIGN 7): nothing a client or an upstream sends freezes the
server or produces a 500; every refusal is a 400 naming the field."""

import json
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
