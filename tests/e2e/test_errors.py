"""Every failure on /v1 is an OpenAI error object with the right status."""

from collections.abc import Iterator
from typing import Any

import httpx
import openai
import pytest

from tests.fakes.base import FakeUpstream, Reply
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.server import GatewayServer
from tests.upstreams import api_key_of


def post(gateway: GatewayServer, body: Any, **options: Any) -> httpx.Response:
    return httpx.post(f"{gateway.url}/v1/chat/completions", json=body, timeout=30, **options)


def assert_error(
    response: httpx.Response, status: int, error_type: str, param: str | None
) -> dict[str, Any]:
    assert response.status_code == status, response.text
    assert response.headers["content-type"].startswith("application/json")
    error = response.json()["error"]
    assert set(error) == {"type", "message", "code", "param"}
    assert error["type"] == error_type
    assert error["param"] == param
    assert error["message"]
    return error


def chat(user_id: str | None = "u", **fields: Any) -> dict[str, Any]:
    body: dict[str, Any] = {
        "model": "openai-agent",
        "messages": [{"role": "user", "content": "Hi"}],
    }
    if user_id is not None:
        body["safety_identifier"] = user_id
    return {**body, **fields}


@pytest.mark.parametrize(
    ("body", "param", "code"),
    [
        (chat(user_id=None), "safety_identifier", "missing_user"),
        (chat(messages=[{"role": "system", "content": "x"}]), "messages", "missing_user_message"),
        (chat(model="no-such-agent"), "model", "model_not_found"),
        (chat(metadata={"tokens_per_day": "ten"}), "metadata.tokens_per_day", "invalid_metadata"),
        (chat(metadata={"tokens_per_hour": "-5"}), "metadata.tokens_per_hour", "invalid_metadata"),
        (
            chat(metadata={"tokens_per_month": "1.5"}),
            "metadata.tokens_per_month",
            "invalid_metadata",
        ),
        (chat(metadata={"language": "en_US"}), "metadata.language", "invalid_metadata"),
        (chat(metadata={"language": "not a tag"}), "metadata.language", "invalid_metadata"),
        (
            chat(
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": "x", "schema": {"type": "nope"}},
                }
            ),
            "response_format.json_schema.schema",
            "invalid_json_schema",
        ),
        (chat(response_format={"type": "xml"}), "response_format.type", "invalid_response_format"),
        (chat(messages="hello"), "messages", "invalid_type"),
        (chat(messages=[]), "messages", "invalid_type"),
        (chat(messages=[{"role": "wizard", "content": "x"}]), "messages[0].role", "invalid_type"),
        (chat(temperature="hot"), "temperature", "invalid_type"),
        (chat(max_tokens=0), "max_tokens", "invalid_type"),
        (chat(max_completion_tokens=-1), "max_completion_tokens", "invalid_type"),
        (chat(metadata={"tokens_per_day": 100}), "metadata.tokens_per_day", "invalid_type"),
        ({"messages": [{"role": "user", "content": "Hi"}]}, "model", "invalid_type"),
    ],
    ids=[
        "no-user-id",
        "no-user-message",
        "unknown-agent",
        "budget-not-integer",
        "budget-negative",
        "budget-fraction",
        "language-underscore",
        "language-garbage",
        "malformed-json-schema",
        "unknown-response-format",
        "messages-not-a-list",
        "messages-empty",
        "unknown-role",
        "temperature-not-number",
        "max-tokens-zero",
        "max-completion-tokens-negative",
        "metadata-value-not-string",
        "model-missing",
    ],
)
def test_bad_request_is_400_naming_the_field(
    gateway: GatewayServer, body: dict[str, Any], param: str, code: str
) -> None:
    error = assert_error(post(gateway, body), 400, "invalid_request_error", param)
    assert error["code"] == code


@pytest.mark.parametrize(
    ("path", "body", "param", "message"),
    [
        (
            "responses",
            {"model": "openai-agent", "input": 42, "user": "u"},
            "input",
            "input must be a string or a list",
        ),
        (
            "chat/completions",
            chat(
                messages=[
                    {"role": "user", "content": [{"type": "image_url", "image_url": "https://x"}]}
                ]
            ),
            "messages[0].content[0].image_url",
            "messages[0].content[0].image_url must be an object",
        ),
        ("chat/completions", chat(stop=5), "stop", "stop must be a string or a list"),
        (
            "responses",
            {"model": "openai-agent", "input": [], "user": "u"},
            "input",
            "input must contain at least one message with role 'user'",
        ),
    ],
    ids=["input-number", "image-url-string", "stop-number", "input-empty"],
)
def test_400_names_the_field_the_client_sent(
    gateway: GatewayServer, path: str, body: dict[str, Any], param: str, message: str
) -> None:
    response = httpx.post(f"{gateway.url}/v1/{path}", json=body)

    assert assert_error(response, 400, "invalid_request_error", param)["message"] == message


def test_malformed_json_body_is_400(gateway: GatewayServer) -> None:
    response = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        content=b'{"model": "openai-agent", "messages": [',
        headers={"Content-Type": "application/json"},
    )
    assert assert_error(response, 400, "invalid_request_error", None)["code"] == "invalid_json"


def test_unknown_route_is_404(gateway: GatewayServer) -> None:
    assert_error(httpx.get(f"{gateway.url}/v1/audio/speech"), 404, "not_found_error", None)
    assert_error(
        httpx.post(f"{gateway.url}/v1/nothing/here", json={}), 404, "not_found_error", None
    )


def test_a_4xx_no_retry_can_fix_says_so_and_others_do_not(
    gateway: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    """``x-should-retry: false``, which the OpenAI and Anthropic SDKs and Claude Code
    honour, on 400, 404 and 413 (401 and 403: see the key tests), never on 429 or 5xx."""
    final = [
        post(gateway, {"model": "openai-agent"}),
        httpx.get(f"{gateway.url}/v1/models/nope"),
        httpx.post(f"{gateway.url}/v1/messages", json={"model": "nope"}),
        httpx.post(
            f"{gateway.url}/v1/chat/completions",
            content=b"x" * 11 * 1024 * 1024,
            headers={"Content-Type": "application/json"},
        ),
    ]
    assert [response.status_code for response in final] == [400, 404, 400, 413]
    assert {response.headers.get("x-should-retry") for response in final} == {"false"}
    openai_fake.script(Reply.of_error(429, "Rate limit reached"), Reply.of_error(500, "boom"))
    retryable = [post(gateway, chat()), post(gateway, chat())]
    assert [response.status_code for response in retryable] == [429, 502]
    assert {response.headers.get("x-should-retry") for response in retryable} == {None}


def test_wrong_method_is_405(gateway: GatewayServer) -> None:
    response = httpx.get(f"{gateway.url}/v1/chat/completions")
    assert_error(response, 405, "invalid_request_error", None)
    assert "POST" in response.headers["allow"]
    assert_error(httpx.delete(f"{gateway.url}/v1/models"), 405, "invalid_request_error", None)


def test_sdk_sees_unknown_agent_as_bad_request(client: openai.OpenAI, user_id: str) -> None:
    with pytest.raises(openai.BadRequestError) as raised:
        client.chat.completions.create(
            model="nope", messages=[{"role": "user", "content": "x"}], safety_identifier=user_id
        )
    assert raised.value.status_code == 400
    assert "nope" in raised.value.message


def test_upstream_server_error_is_502(gateway: GatewayServer, openai_fake: OpenAIUpstream) -> None:
    openai_fake.script(Reply.of_error(500, {"error": {"message": "boom", "type": "server_error"}}))
    error = assert_error(post(gateway, chat()), 502, "upstream_error", None)
    assert "openai" in error["message"] and "boom" in error["message"]


def test_upstream_auth_failure_is_502_without_leaking_the_key(
    gateway: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    key = api_key_of("openai")
    openai_fake.script(Reply.of_error(401, f"Incorrect API key provided: {key}"))
    response = post(gateway, chat())
    error = assert_error(response, 502, "upstream_error", None)
    assert error["code"] == "upstream_auth"
    assert key not in response.text


def test_upstream_rate_limit_is_429_with_retry_after(
    gateway: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(Reply.of_error(429, "Rate limit reached", headers={"Retry-After": "17"}))
    response = post(gateway, chat())
    assert_error(response, 429, "rate_limit_exceeded", None)
    assert response.headers["retry-after"] == "17"


def test_dropped_upstream_connection_is_502(
    gateway: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(Reply(drop=True))
    assert_error(post(gateway, chat()), 502, "upstream_error", None)


def test_upstream_timeout_is_504(gateway: GatewayServer, fakes: dict[str, FakeUpstream]) -> None:
    fakes["deepseek"].script(Reply.of_text("late", delay=2.5))
    error = assert_error(post(gateway, chat(model="deepseek-agent")), 504, "upstream_error", None)
    assert error["code"] == "upstream_timeout"


def test_upstream_failure_before_a_stream_starts_is_an_http_error(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_error(503, "overloaded"))
    with pytest.raises(openai.APIStatusError) as raised:
        client.chat.completions.create(
            model="openai-agent",
            messages=[{"role": "user", "content": "x"}],
            safety_identifier=user_id,
            stream=True,
        )
    assert raised.value.status_code == 503


def test_mid_stream_failure_ends_with_an_error_frame(
    gateway: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(Reply.of_chunks("one ", "two ", "three", drop_after_chunks=2))
    with httpx.stream(
        "POST", f"{gateway.url}/v1/chat/completions", json=chat(stream=True), timeout=30
    ) as response:
        assert response.status_code == 200
        frames = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert '"content":"one "' in frames[1]
    assert frames[-1].startswith('data: {"error":')
    assert "[DONE]" not in "".join(frames)


def test_sdk_raises_on_a_mid_stream_error_frame(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_chunks("one ", "two ", "three", drop_after_chunks=2))
    stream = client.chat.completions.create(
        model="openai-agent",
        messages=[{"role": "user", "content": "x"}],
        safety_identifier=user_id,
        stream=True,
    )
    with pytest.raises(openai.APIError):
        list(stream)


def test_large_bodies_are_accepted_and_oversized_ones_are_413(
    gateway: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    three_megabytes = chat(messages=[{"role": "user", "content": "x" * 3_000_000}])
    answered = post(gateway, three_megabytes)  # over 1 MiB: parsed off the event loop
    assert answered.status_code == 200
    assert len(openai_fake.last.body["messages"][-1]["content"]) == 3_000_000
    too_large = chat(messages=[{"role": "user", "content": "x" * (12 * 1024 * 1024)}])
    error = assert_error(post(gateway, too_large), 413, "invalid_request_error", None)
    assert error["code"] == "request_too_large" and "limits.max_body_mb" in error["message"]


def test_an_oversized_body_without_a_length_is_413_as_it_arrives(gateway: GatewayServer) -> None:
    """Chunked: no Content-Length to refuse it by, so it is counted as it comes, while the
    server goes on answering others."""
    sent = 0

    def chunks() -> Iterator[bytes]:
        nonlocal sent
        yield b'{"model": "openai-agent", "messages": [{"role": "user", "content": "'
        while sent < 64 * 1024 * 1024:
            sent += 1024 * 1024
            assert httpx.get(f"{gateway.url}/healthz", timeout=10).status_code == 200
            yield b"x" * 1024 * 1024
        yield b'"}]}'

    response = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        content=chunks(),
        headers={"Content-Type": "application/json"},
        timeout=60,
    )

    assert_error(response, 413, "invalid_request_error", None)
    assert response.json()["error"]["code"] == "request_too_large"


def raw_post(gateway: GatewayServer, text: str) -> httpx.Response:
    return httpx.post(
        f"{gateway.url}/v1/chat/completions",
        content=text.encode(),
        headers={"Content-Type": "application/json"},
        timeout=30,
    )


def test_empty_body_is_400_saying_what_is_expected(gateway: GatewayServer) -> None:
    error = assert_error(raw_post(gateway, ""), 400, "invalid_request_error", None)
    assert "JSON object" in error["message"]


@pytest.mark.parametrize("number", ["NaN", "Infinity", "-Infinity"])
def test_non_finite_sampling_numbers_are_400(gateway: GatewayServer, number: str) -> None:
    body = (
        '{"model": "openai-agent", "safety_identifier": "u", "temperature": '
        + number
        + ', "messages": [{"role": "user", "content": "x"}]}'
    )
    assert_error(raw_post(gateway, body), 400, "invalid_request_error", "temperature")


def test_non_finite_numbers_in_a_schema_are_400(
    gateway: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    body = (
        '{"model": "openai-agent", "safety_identifier": "u", '
        '"messages": [{"role": "user", "content": "x"}], "response_format": {"type": '
        '"json_schema", "json_schema": {"name": "n", "schema": {"const": NaN}}}}'
    )
    error = assert_error(
        raw_post(gateway, body), 400, "invalid_request_error", "response_format.json_schema.schema"
    )
    assert error["code"] == "invalid_json_schema"
    assert openai_fake.requests == []


@pytest.mark.parametrize(
    "reference", ["http://127.0.0.1:9/internal-secret", "#/$defs/missing", "other.json"]
)
def test_schema_references_must_resolve_inside_the_schema(
    gateway: GatewayServer, openai_fake: OpenAIUpstream, reference: str
) -> None:
    schema = {"type": "object", "properties": {"a": {"$ref": reference}}}
    response_format = {"type": "json_schema", "json_schema": {"name": "n", "schema": schema}}
    response = post(gateway, chat(response_format=response_format))
    error = assert_error(
        response, 400, "invalid_request_error", "response_format.json_schema.schema"
    )
    assert "does not resolve inside the schema" in error["message"]
    assert openai_fake.requests == []


def test_local_schema_references_are_followed(
    gateway: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    schema = {
        "$defs": {"count": {"type": "integer"}},
        "type": "object",
        "properties": {"n": {"$ref": "#/$defs/count"}},
        "required": ["n"],
    }
    openai_fake.script(Reply.of_text('{"n": "three"}'), Reply.of_text('{"n": 3}'))
    response_format = {"type": "json_schema", "json_schema": {"name": "n", "schema": schema}}
    response = post(gateway, chat(response_format=response_format))
    assert response.status_code == 200, response.text
    assert response.json()["choices"][0]["message"]["content"] == '{"n": 3}'
    assert len(openai_fake.requests) == 2


def test_user_ids_longer_than_storage_allows_are_400(gateway: GatewayServer) -> None:
    error = assert_error(
        post(gateway, chat(user_id="u" * 256)), 400, "invalid_request_error", "safety_identifier"
    )
    assert error["code"] == "invalid_user"


@pytest.mark.parametrize(
    "body",
    [
        {"choices": [{"message": None}]},
        {"choices": [{"message": {"content": "x", "tool_calls": [{"function": {}}]}}]},
        {"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": "abc"}},
    ],
    ids=["null-message", "tool-call-without-id", "usage-not-a-number"],
)
def test_unreadable_upstream_reply_is_502(
    gateway: GatewayServer, openai_fake: OpenAIUpstream, body: dict[str, Any]
) -> None:
    openai_fake.script(Reply(raw_body=body))
    error = assert_error(post(gateway, chat()), 502, "upstream_error", None)
    assert "cannot read" in error["message"]


def test_unreadable_stream_frame_ends_the_stream_with_an_error_frame(
    gateway: GatewayServer, openai_fake: OpenAIUpstream
) -> None:
    frames = (
        b'data: {"choices": [{"index": 0, "delta": {"content": "one "}}]}\n\n',
        b"data: [1]\n\n",
    )
    openai_fake.script(Reply(raw_frames=frames))
    with httpx.stream(
        "POST", f"{gateway.url}/v1/chat/completions", json=chat(stream=True), timeout=10
    ) as response:
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    assert '"content":"one "' in lines[1]
    assert lines[-1].startswith('data: {"error":') and "cannot read" in lines[-1]


def test_a_reply_cut_by_the_provider_is_not_remembered(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_chunks("half ", "a ", "reply", drop_after_chunks=2))
    with pytest.raises(openai.APIError):
        list(
            client.chat.completions.create(
                model="openai-agent",
                messages=[{"role": "user", "content": "first"}],
                safety_identifier=user_id,
                stream=True,
            )
        )
    client.chat.completions.create(
        model="openai-agent",
        messages=[{"role": "user", "content": "second"}],
        safety_identifier=user_id,
    )
    assert openai_fake.last.body["messages"][1:] == [{"role": "user", "content": "second"}]
