"""The Anthropic Messages API (``/v1/messages``, ``/v1/messages/count_tokens``) in front
of every wire format, through the real server with the official ``anthropic`` SDK."""

import json
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest

from tests.fakes.anthropic_upstream import thinking_signature
from tests.fakes.base import FakeUpstream, Reply
from tests.server import GatewayServer
from tests.upstreams import received, sent_tool_calls_and_results

KINDS = ["openai", "anthropic", "gemini", "cohere"]  # the four wire formats
CLAUDE_CODE_REQUEST = Path(__file__).parents[1] / "fixtures" / "claude_code_first_request.json"
WEATHER = {
    "name": "get_weather",
    "description": "Current weather of a city.",
    "input_schema": {
        "$schema": "https://json-schema.org/draft/2020-12/schema",
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
}


@pytest.fixture
def claude(gateway: GatewayServer) -> anthropic.Anthropic:
    return anthropic.Anthropic(base_url=gateway.url, api_key="any-key", max_retries=0)


def ask(user_id: str, text: str = "Hi", **options: Any) -> dict[str, Any]:
    return {
        "max_tokens": 200,
        "messages": [{"role": "user", "content": text}],
        "metadata": {"user_id": user_id},
        **options,
    }


def answer(claude: anthropic.Anthropic, stream: bool, **request: Any) -> anthropic.types.Message:
    """The whole message, asked for streamed (then accumulated by the SDK) or not."""
    if stream:
        with claude.messages.stream(**request) as events:
            return events.get_final_message()
    return claude.messages.create(**request)


@pytest.mark.parametrize("kind", KINDS)
def test_a_message_is_answered_in_anthropic_shape_and_remembered_for_its_user(
    kind: str, claude: anthropic.Anthropic, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fake = fakes[kind]
    fake.script(Reply.of_text("Hello, Ada.", prompt_tokens=9, completion_tokens=3))

    message = claude.messages.create(
        model=f"{kind}-agent", system="Be brief.", **ask(user_id, "I am Ada.")
    )

    assert message.id.startswith("msg_") and message.type == "message"
    assert message.model == f"{kind}-agent" and message.stop_reason == "end_turn"
    assert [(block.type, getattr(block, "text", None)) for block in message.content] == [
        ("text", "Hello, Ada.")
    ]
    assert (message.usage.input_tokens, message.usage.output_tokens) == (9, 3)
    sent = received(kind, fake.last)
    assert f"You are the {kind} agent of ACME." in sent.system and "Be brief." in sent.system

    fake.script(Reply.of_text("You are Ada."))
    claude.messages.create(model=f"{kind}-agent", **ask(user_id, "Who am I?"))
    assert received(kind, fake.last).turns == [
        ("user", "I am Ada."),
        ("assistant", "Hello, Ada."),
        ("user", "Who am I?"),
    ]


@pytest.mark.parametrize("kind", KINDS)
def test_a_stream_is_anthropics_event_sequence(
    kind: str, claude: anthropic.Anthropic, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(Reply.of_chunks("Hello ", "from ", "the stream.", completion_tokens=5))

    with claude.messages.stream(model=f"{kind}-agent", **ask(user_id)) as stream:
        kinds = [event.type for event in stream]
        final = stream.get_final_message()

    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert kinds.count("content_block_start") == kinds.count("content_block_stop") == 1
    assert "text" in kinds and kinds[-2] == "message_delta"
    assert final.content[0].type == "text" and final.content[0].text == "Hello from the stream."
    assert final.stop_reason == "end_turn" and final.usage.output_tokens == 5


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_a_tool_call_and_its_result_round_trip(
    kind: str,
    stream: bool,
    claude: anthropic.Anthropic,
    fakes: dict[str, FakeUpstream],
    user_id: str,
) -> None:
    fake = fakes[kind]
    fake.script(Reply.of_tool_calls(("get_weather", {"city": "Quito"})), Reply.of_text("Mild."))
    question = [{"role": "user", "content": "Weather in Quito?"}]
    options: dict[str, Any] = {
        "model": f"{kind}-agent",
        "max_tokens": 200,
        "tools": [WEATHER],
        "metadata": {"user_id": user_id},
    }

    first = answer(claude, stream, messages=question, **options)

    assert first.stop_reason == "tool_use"
    (call,) = [block for block in first.content if block.type == "tool_use"]
    assert (call.name, call.input) == ("get_weather", {"city": "Quito"})
    final = claude.messages.create(
        messages=[
            *question,
            {"role": "assistant", "content": [block.model_dump() for block in first.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "14 °C"}],
            },
        ],
        **options,
    )

    assert final.content[0].type == "text" and final.content[0].text == "Mild."
    calls, results = sent_tool_calls_and_results(kind, fake.last.body)
    assert [(c[0], c[1]) for c in calls] == [(call.id, "get_weather")]
    assert results == [(call.id, "14 °C")]


def test_errors_are_in_anthropics_shape(
    claude: anthropic.Anthropic, gateway: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    with pytest.raises(anthropic.NotFoundError) as unknown:
        claude.messages.create(model="no-such-agent", **ask("u"))
    assert unknown.value.body["error"]["type"] == "not_found_error"

    missing = httpx.post(
        f"{gateway.url}/v1/messages",
        json={"model": "openai-agent", "messages": [{"role": "user", "content": "Hi"}]},
    )
    assert missing.status_code == 400
    assert missing.json()["type"] == "error"
    assert missing.json()["error"]["type"] == "invalid_request_error"
    assert "max_tokens" in missing.json()["error"]["message"]

    with pytest.raises(anthropic.BadRequestError) as no_user:
        claude.messages.create(
            model="openai-agent", max_tokens=10, messages=[{"role": "user", "content": "Hi"}]
        )
    assert "safety_identifier" in no_user.value.body["error"]["message"]

    fakes["anthropic"].script(
        Reply.of_error(429, "slow down", headers={"retry-after": "7"}),
        Reply.of_error(529, "Overloaded"),
    )
    with pytest.raises(anthropic.RateLimitError) as limited:
        claude.messages.create(model="anthropic-agent", **ask("u"))
    assert limited.value.body["error"]["type"] == "rate_limit_error"
    assert limited.value.response.headers["retry-after"] == "7"
    with pytest.raises(anthropic.APIStatusError) as overloaded:
        claude.messages.create(model="anthropic-agent", **ask("u"))
    assert overloaded.value.status_code == 529
    assert overloaded.value.body["error"]["type"] == "overloaded_error"


def test_a_failure_mid_stream_is_an_error_event(
    gateway: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    fakes["anthropic"].script(
        Reply.of_chunks("Partial ", "answer", error_body={"type": "overloaded_error"})
    )

    response = httpx.post(
        f"{gateway.url}/v1/messages",
        json={"model": "anthropic-agent", "stream": True, **ask("u")},
        timeout=30,
    )

    assert response.status_code == 200
    events = [
        line.removeprefix("event: ")
        for line in response.text.splitlines()
        if line.startswith("event: ")
    ]
    assert events[0] == "message_start" and events[-1] == "error"
    last = json.loads(response.text.strip().splitlines()[-1].removeprefix("data: "))
    assert last["type"] == "error" and last["error"]["type"] == "overloaded_error"


@pytest.mark.parametrize("stream", [False, True])
def test_thinking_signatures_reach_an_anthropic_upstream_unchanged_across_a_tool_round(
    stream: bool, claude: anthropic.Anthropic, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    """The fake refuses a thinking block whose signature changed, and a tool round sent
    back without its thinking first."""
    fake = fakes["anthropic"]
    fake.script(
        Reply.of_tool_calls(("get_weather", {"city": "Oslo"}), thinking="Weather needs a tool."),
        Reply.of_text("Cold."),
    )
    thinking = {"type": "enabled", "budget_tokens": 2048}
    question = [{"role": "user", "content": "Weather in Oslo?"}]
    options: dict[str, Any] = {
        "model": "anthropic-agent",
        "max_tokens": 4000,
        "tools": [WEATHER],
        "thinking": thinking,
        "metadata": {"user_id": user_id},
    }

    first = answer(claude, stream, messages=question, **options)

    assert [block.type for block in first.content] == ["thinking", "tool_use"]
    assert first.content[0].signature == thinking_signature("Weather needs a tool.")
    assert fake.last.body["thinking"] == thinking
    call = first.content[1]
    final = claude.messages.create(
        messages=[
            *question,
            {"role": "assistant", "content": [block.model_dump() for block in first.content]},
            {
                "role": "user",
                "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "-3 °C"}],
            },
        ],
        **options,
    )

    assert final.content[-1].type == "text" and final.content[-1].text == "Cold."
    sent_back = fake.last.body["messages"][1]["content"][0]
    assert sent_back == {
        "type": "thinking",
        "thinking": "Weather needs a tool.",
        "signature": thinking_signature("Weather needs a tool."),
    }


def test_cache_control_and_anthropics_own_fields_reach_an_anthropic_upstream_only(
    gateway: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    cache = {"type": "ephemeral"}
    body = {
        "max_tokens": 300,
        "system": [{"type": "text", "text": "Long stable context.", "cache_control": cache}],
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "Here is a long document.", "cache_control": cache},
                    {"type": "text", "text": "Summarize it."},
                ],
            }
        ],
        "context_management": {"edits": [{"type": "clear_thinking_20251015", "keep": "all"}]},
        "metadata": {"user_id": user_id},
    }
    headers = {"anthropic-beta": "context-management-2025-06-27", "x-api-key": "any"}
    for kind in ("anthropic", "openai"):
        fakes[kind].script(Reply.of_text("Summary."))
        response = httpx.post(
            f"{gateway.url}/v1/messages",
            json={"model": f"{kind}-agent", **body},
            headers=headers,
            timeout=30,
        )
        assert response.status_code == 200, response.text

    sent = fakes["anthropic"].last
    assert sent.headers["anthropic-beta"] == "context-management-2025-06-27"
    assert sent.body["context_management"] == body["context_management"]
    (system,) = sent.body["system"]
    assert system["cache_control"] == cache and system["text"].endswith("Long stable context.")
    assert sent.body["messages"][-1]["content"] == [
        {"type": "text", "text": "Here is a long document.", "cache_control": cache},
        {"type": "text", "text": "Summarize it."},
    ]
    openai_body = fakes["openai"].last.body
    assert "cache_control" not in json.dumps(openai_body)
    assert "context_management" not in openai_body
    assert "anthropic-beta" not in fakes["openai"].last.headers
    assert openai_body["messages"][-1] == {
        "role": "user",
        "content": "Here is a long document.Summarize it.",
    }


def test_cache_control_on_chat_completions_content_reaches_an_anthropic_upstream(
    gateway: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    cache = {"type": "ephemeral"}
    fakes["anthropic"].script(Reply.of_text("Done."))

    response = httpx.post(
        f"{gateway.url}/v1/chat/completions",
        json={
            "model": "anthropic-agent",
            "user": user_id,
            "messages": [
                {
                    "role": "system",
                    "content": [{"type": "text", "text": "Rules.", "cache_control": cache}],
                },
                {
                    "role": "user",
                    "content": [
                        {"type": "text", "text": "Big context.", "cache_control": cache},
                        {"type": "text", "text": "Question?"},
                    ],
                },
            ],
        },
        timeout=30,
    )

    assert response.status_code == 200, response.text
    sent = fakes["anthropic"].last.body
    assert sent["system"][0]["cache_control"] == cache
    assert sent["messages"][-1]["content"] == [
        {"type": "text", "text": "Big context.", "cache_control": cache},
        {"type": "text", "text": "Question?"},
    ]


def test_cached_prompt_tokens_are_counted_as_anthropic_counts_them(
    claude: anthropic.Anthropic, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes["anthropic"].script(
        Reply.of_text("Cached.", prompt_tokens=1000, cached_tokens=400, cache_write_tokens=100)
    )

    message = claude.messages.create(model="anthropic-agent", **ask(user_id))

    usage = message.usage
    assert (usage.input_tokens, usage.cache_read_input_tokens) == (500, 400)
    assert usage.cache_creation_input_tokens == 100


def test_count_tokens_asks_an_anthropic_upstream_and_estimates_for_the_others(
    claude: anthropic.Anthropic, fakes: dict[str, FakeUpstream]
) -> None:
    fakes["anthropic"].script(Reply(raw_body={"input_tokens": 1234}))
    request: dict[str, Any] = {
        "system": "Be brief.",
        "messages": [{"role": "user", "content": "How many tokens is this?"}],
        "tools": [WEATHER],
    }

    counted = claude.messages.count_tokens(model="anthropic-agent", **request)

    assert counted.input_tokens == 1234
    sent = fakes["anthropic"].last
    assert sent.path == "/v1/messages/count_tokens" and "max_tokens" not in sent.body
    assert "You are the anthropic agent of ACME." in sent.body["system"]
    assert [tool["name"] for tool in sent.body["tools"]] == ["get_weather"]
    estimated = claude.messages.count_tokens(model="openai-agent", **request)
    assert 20 < estimated.input_tokens < 200
    assert fakes["openai"].requests == []
    with pytest.raises(anthropic.NotFoundError):
        claude.messages.count_tokens(model="no-such-agent", **request)


@pytest.mark.parametrize("kind", ["anthropic", "openai"])
def test_claude_codes_first_request_is_served(
    kind: str, gateway: GatewayServer, fakes: dict[str, FakeUpstream]
) -> None:
    """Claude Code 2.1's first request as it sent it: streamed, system blocks with
    cache_control, a system message inside messages, tools with a 2020-12 $schema and
    defer_loading, adaptive thinking, context_management, output_config, beta headers."""
    captured = json.loads(CLAUDE_CODE_REQUEST.read_text())
    fakes[kind].script(Reply.of_text("Hi there."))

    response = httpx.post(
        f"{gateway.url}/v1/messages?beta=true",
        json={**captured["body"], "model": f"{kind}-agent"},
        headers={**captured["headers"], "x-api-key": "any"},
        timeout=30,
    )

    assert response.status_code == 200, response.text
    assert "event: message_stop" in response.text
    sent = fakes[kind].last
    system = received(kind, sent).system
    assert "You are a Claude agent" in system and "# Environment" in system
    if kind == "anthropic":
        assert sent.body["thinking"] == {"type": "adaptive", "display": "omitted"}
        assert sent.body["output_config"] == {"effort": "high"}
        assert sent.headers["anthropic-beta"] == captured["headers"]["anthropic-beta"]
        assert len(sent.body["tools"]) == len(captured["body"]["tools"])
    else:
        assert "thinking" not in sent.body and "output_config" not in sent.body


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize(
    ("kind", "upstream_reason", "expected"),
    [
        ("anthropic", "stop_sequence", "stop_sequence"),
        ("cohere", "STOP_SEQUENCE", "stop_sequence"),
        ("openai", "stop", "end_turn"),
    ],
)
def test_stop_sequence_is_told_only_where_the_upstream_says_so(
    kind: str,
    upstream_reason: str,
    expected: str,
    stream: bool,
    claude: anthropic.Anthropic,
    fakes: dict[str, FakeUpstream],
    user_id: str,
) -> None:
    fakes[kind].script(Reply.of_text("Counting: 1, 2", finish_reason=upstream_reason))
    options = ask(user_id, stop_sequences=["3"], extra_body={"top_k": 5})

    message = answer(claude, stream, model=f"{kind}-agent", **options)

    assert message.stop_reason == expected
    sent = fakes[kind].last.body
    top_k = {"anthropic": ("top_k", 5), "cohere": ("k", 5), "openai": ("top_k", None)}[kind]
    assert sent.get(top_k[0]) == top_k[1]


def stored_users(gateway: GatewayServer, *users: str) -> dict[str, int]:
    """How many history messages each of ``users`` has."""
    return {
        user: len(
            httpx.get(
                f"{gateway.url}/admin/conversations",
                params={"user": user},
                headers={"Accept": "application/json"},
                timeout=10,
            ).json()["data"]
        )
        for user in users
    }


def test_x_user_id_names_the_user_before_claude_codes_own_metadata(
    gateway: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    """Claude Code fills ``metadata.user_id`` with its session's JSON; an operator's
    ``X-User-Id`` (``ANTHROPIC_CUSTOM_HEADERS``) names the user over it, and without it the
    JSON means its account, else its device, so sessions are one user."""
    session = {"device_id": f"dev-{user_id}", "account_uuid": "", "session_id": "s-1"}
    headed = anthropic.Anthropic(
        base_url=gateway.url,
        api_key="any-key",
        max_retries=0,
        default_headers={"X-User-Id": f"ada-{user_id}"},
    )
    headed.messages.create(model="anthropic-agent", **ask(json.dumps(session)))
    plain = anthropic.Anthropic(base_url=gateway.url, api_key="any-key", max_retries=0)
    for session_id in ("s-2", "s-3"):
        plain.messages.create(
            model="anthropic-agent", **ask(json.dumps({**session, "session_id": session_id}))
        )
    account = {**session, "account_uuid": f"acct-{user_id}"}
    plain.messages.create(model="anthropic-agent", **ask(json.dumps(account)))

    assert stored_users(
        gateway, f"ada-{user_id}", f"dev-{user_id}", f"acct-{user_id}", json.dumps(session)
    ) == {f"ada-{user_id}": 2, f"dev-{user_id}": 4, f"acct-{user_id}": 2, json.dumps(session): 0}


@pytest.mark.parametrize("kind", KINDS)
def test_a_tool_result_marked_as_an_error_says_so_to_every_upstream(
    kind: str, claude: anthropic.Anthropic, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    """Anthropic upstreams get ``is_error`` on the block; the others, an error's text."""
    fake = fakes[kind]
    fake.script(Reply.of_tool_calls(("get_weather", {"city": "Oslo"})), Reply.of_text("Sorry."))
    question = [{"role": "user", "content": "Weather in Oslo?"}]
    options: dict[str, Any] = {"model": f"{kind}-agent", "max_tokens": 200, "tools": [WEATHER]}
    first = claude.messages.create(messages=question, metadata={"user_id": user_id}, **options)
    call = next(block for block in first.content if block.type == "tool_use")

    claude.messages.create(
        messages=[
            *question,
            {"role": "assistant", "content": [block.model_dump() for block in first.content]},
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": call.id,
                        "content": "the weather service is down",
                        "is_error": True,
                    }
                ],
            },
        ],
        metadata={"user_id": user_id},
        **options,
    )

    sent = json.dumps(fake.last.body)
    if kind == "anthropic":
        (result,) = [
            block
            for message in fake.last.body["messages"]
            for block in message["content"]
            if block["type"] == "tool_result"
        ]
        assert result["is_error"] is True
        assert result["content"] == "the weather service is down"
    else:
        assert "Error: the weather service is down" in sent


@pytest.mark.parametrize("stream", [False, True])
@pytest.mark.parametrize("kind", KINDS)
def test_text_before_tool_calls_is_the_first_block(
    kind: str, stream: bool, claude: anthropic.Anthropic, fakes: dict[str, FakeUpstream]
) -> None:
    """Whatever order the provider sends them in (Cohere sends its tool plan first)."""
    fakes[kind].script(
        Reply(
            text="Let me look.",
            chunks=("Let me ", "look."),
            tool_calls=(("get_weather", {"city": "Oslo"}),),
            finish_reason="tool_calls",
        )
    )

    message = answer(
        claude,
        stream,
        model=f"{kind}-agent",
        max_tokens=200,
        tools=[WEATHER],
        messages=[{"role": "user", "content": "Weather in Oslo?"}],
        metadata={"history": "off", "user_id": "blocks"},
    )

    assert [block.type for block in message.content] == ["text", "tool_use"]
    assert message.content[0].text == "Let me look."
    assert message.content[1].input == {"city": "Oslo"}
