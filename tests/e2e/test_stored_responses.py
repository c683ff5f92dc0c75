"""Stored Responses (``store``, ``previous_response_id``, retrieval, deletion, input items)
and what coding agents send to ``/v1/responses``, through the real server with the
official SDK."""

import json
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest
from openai.types.responses import Response

from tests.fakes.anthropic_upstream import thinking_signature
from tests.fakes.base import FakeUpstream, Reply
from tests.server import GatewayServer
from tests.upstreams import FAKE_CLASSES, received, sent_tool_calls_and_results

KINDS = list(FAKE_CLASSES)
CODEX_REQUEST = Path(__file__).parents[1] / "fixtures" / "codex_first_request.json"
WEATHER = {
    "type": "function",
    "name": "get_weather",
    "description": "Current weather of a city.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
}


def as_user(user_id: str) -> dict[str, Any]:
    """What the retrieval routes identify the user by here (no key, no default user)."""
    return {"extra_headers": {"X-User-Id": user_id}}


@pytest.mark.parametrize("kind", ["openai", "anthropic", "gemini"])
def test_a_chain_of_three_turns_carries_every_earlier_turn(
    kind: str, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fake = fakes[kind]
    fake.script(
        Reply.of_text("Hello Ada."),
        Reply.of_text("Aside."),
        Reply.of_text("Lima."),
        Reply.of_text("Ada, Lima."),
    )
    model = f"{kind}-agent"

    first = client.responses.create(model=model, input="I am Ada.", safety_identifier=user_id)
    # In the user's history, but not in the chain.
    client.responses.create(model=model, input="Unrelated.", safety_identifier=user_id)
    second = client.responses.create(
        model=model,
        input="Where do I live? Lima.",
        previous_response_id=first.id,
        safety_identifier=user_id,
    )
    third = client.responses.create(
        model=model,
        input=[{"role": "user", "content": "Sum it up."}],
        previous_response_id=second.id,
        instructions="Be brief.",
        safety_identifier=user_id,
    )

    assert third.output_text == "Ada, Lima." and third.previous_response_id == second.id
    sent = received(kind, fake.last)
    assert sent.turns == [
        ("user", "I am Ada."),
        ("assistant", "Hello Ada."),
        ("user", "Where do I live? Lima."),
        ("assistant", "Lima."),
        ("user", "Sum it up."),
    ]
    assert "Be brief." in sent.system


def test_a_function_call_output_answers_the_call_of_the_previous_response(
    client: openai.OpenAI, openai_fake: FakeUpstream, user_id: str
) -> None:
    """What the OpenAI Agents SDK sends with previous_response_id: only the outputs."""
    openai_fake.script(
        Reply.of_tool_calls(("get_weather", {"city": "Quito"})), Reply.of_text("Cool.")
    )
    first = client.responses.create(
        model="openai-agent", input="Weather in Quito?", tools=[WEATHER], safety_identifier=user_id
    )
    (call,) = [item for item in first.output if item.type == "function_call"]

    final = client.responses.create(
        model="openai-agent",
        input=[{"type": "function_call_output", "call_id": call.call_id, "output": "14 °C"}],
        previous_response_id=first.id,
        tools=[WEATHER],
        safety_identifier=user_id,
    )

    assert final.output_text == "Cool."
    calls, results = sent_tool_calls_and_results("openai", openai_fake.last.body)
    assert [(c[0], c[1]) for c in calls] == [(call.call_id, "get_weather")]
    assert results == [(call.call_id, "14 °C")]


@pytest.mark.parametrize("stream", [False, True])
def test_a_stored_response_is_retrieved_by_its_user_and_no_other(
    stream: bool, client: openai.OpenAI, openai_fake: FakeUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_text("Kept for you."))
    made: Response
    if stream:
        with client.responses.stream(
            model="openai-agent", input="Hi", safety_identifier=user_id
        ) as events:
            made = events.get_final_response()
    else:
        made = client.responses.create(model="openai-agent", input="Hi", safety_identifier=user_id)

    again = client.responses.retrieve(made.id, **as_user(user_id))

    assert again.id == made.id and again.output_text == "Kept for you."
    assert again.to_dict()["store"] is True
    assert again.usage is not None and again.usage.total_tokens == made.usage.total_tokens
    with pytest.raises(openai.NotFoundError) as refused:
        client.responses.retrieve(made.id, **as_user(f"{user_id}-other"))
    assert refused.value.body["code"] == "response_not_found"
    with pytest.raises(openai.NotFoundError) as continued:
        client.responses.create(
            model="openai-agent",
            input="And now?",
            previous_response_id=made.id,
            safety_identifier=f"{user_id}-other",
        )
    assert continued.value.body["param"] == "previous_response_id"


def test_a_deleted_response_is_gone_and_cannot_be_continued(
    client: openai.OpenAI, openai_fake: FakeUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_text("Soon gone."))
    made = client.responses.create(model="openai-agent", input="Hi", safety_identifier=user_id)

    with pytest.raises(openai.NotFoundError):
        client.responses.delete(made.id, **as_user(f"{user_id}-other"))
    client.responses.delete(made.id, **as_user(user_id))

    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(made.id, **as_user(user_id))
    with pytest.raises(openai.NotFoundError):
        client.responses.delete(made.id, **as_user(user_id))
    with pytest.raises(openai.NotFoundError):
        client.responses.create(
            model="openai-agent",
            input="More",
            previous_response_id=made.id,
            safety_identifier=user_id,
        )
    assert len(openai_fake.requests) == 1


def test_store_false_is_answered_but_not_kept(
    client: openai.OpenAI, openai_fake: FakeUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_text("Not kept."))
    made = client.responses.create(
        model="openai-agent", input="Hi", store=False, safety_identifier=user_id
    )

    assert made.output_text == "Not kept." and made.to_dict()["store"] is False
    with pytest.raises(openai.NotFoundError):
        client.responses.retrieve(made.id, **as_user(user_id))


def test_input_items_are_listed_in_pages_newest_first_by_default(
    client: openai.OpenAI, gateway: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_text("Noted."))
    made = client.responses.create(
        model="openai-agent",
        input=[
            {"role": "developer", "content": "Terse."},
            {"role": "user", "content": "One"},
            {"role": "user", "content": [{"type": "input_text", "text": "Two"}]},
        ],
        safety_identifier=user_id,
    )

    def texts(page: Any) -> list[str]:
        return [item.content[0].text for item in page.data]

    newest = client.responses.input_items.list(made.id, limit=2, **as_user(user_id))
    assert texts(newest) == ["Two", "One"] and newest.has_more
    rest = client.responses.input_items.list(
        made.id, limit=2, after=newest.data[-1].id, **as_user(user_id)
    )
    assert texts(rest) == ["Terse."] and not rest.has_more
    oldest = client.responses.input_items.list(made.id, order="asc", **as_user(user_id))
    assert texts(oldest) == ["Terse.", "One", "Two"]
    assert all(item.id.startswith("msg_") for item in oldest.data)
    assert [item.role for item in oldest.data] == ["developer", "user", "user"]
    listed = httpx.get(
        f"{gateway.url}/v1/responses/{made.id}/input_items",
        params={"limit": 1, "order": "asc"},
        headers={"X-User-Id": user_id},
    ).json()
    assert listed["object"] == "list" and listed["has_more"] is True
    assert listed["first_id"] == listed["last_id"] == oldest.data[0].id


def test_retrieval_without_any_user_is_a_400(gateway: GatewayServer) -> None:
    response = httpx.get(f"{gateway.url}/v1/responses/resp_unknown")

    assert response.status_code == 400
    assert response.json()["error"]["code"] == "missing_user"


# ---- what Codex CLI sends -----------------------------------------------------------------


def codex_request(**changes: Any) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(CODEX_REQUEST.read_text())
    return {**body, "model": "openai-agent", **changes}


def sse_events(response: httpx.Response) -> list[dict[str, Any]]:
    return [
        json.loads(line.removeprefix("data: "))
        for line in response.text.splitlines()
        if line.startswith("data: ")
    ]


def test_codex_first_request_is_served_with_built_in_tools_left_out(
    gateway: GatewayServer, openai_fake: FakeUpstream, user_id: str
) -> None:
    """Codex CLI 0.169's first request as it sent it (namespace and web_search tools,
    developer messages, store false, include, reasoning.summary, prompt_cache_key,
    client_metadata); the model calls a tool of the namespace."""
    openai_fake.script(Reply.of_tool_calls(("spawn_agent", {"message": "look around"})))

    response = httpx.post(
        f"{gateway.url}/v1/responses",
        json=codex_request(safety_identifier=user_id),
        headers={"Authorization": "Bearer anything"},
        timeout=30,
    )

    assert response.status_code == 200, response.text
    assert response.headers["X-Gateway-Dropped-Tools"] == "web_search"
    sent = openai_fake.last.body
    offered = [tool["function"]["name"] for tool in sent["tools"]]
    assert "exec_command" in offered and "spawn_agent" in offered and "close_agent" in offered
    assert "web_search" not in offered
    assert "You are a coding agent running in the Codex CLI" in sent["messages"][0]["content"]
    events = sse_events(response)
    (done,) = [e for e in events if e["type"] == "response.output_item.done"]
    assert done["item"]["type"] == "function_call"
    assert (done["item"]["name"], done["item"]["namespace"]) == ("spawn_agent", "multi_agent_v1")
    assert events[-1]["type"] == "response.completed"
    assert events[-1]["response"]["store"] is False


def test_a_request_with_only_built_in_tools_is_a_400(
    gateway: GatewayServer, openai_fake: FakeUpstream
) -> None:
    response = httpx.post(
        f"{gateway.url}/v1/responses",
        json={
            "model": "openai-agent",
            "input": "Hi",
            "user": "u",
            "tools": [{"type": "web_search"}],
        },
    )

    assert response.status_code == 400
    assert (response.json()["error"]["param"], response.json()["error"]["code"]) == (
        "tools",
        "unsupported_tool_type",
    )
    assert openai_fake.requests == []


def test_reasoning_items_returned_by_a_client_are_accepted(
    client: openai.OpenAI, openai_fake: FakeUpstream, user_id: str
) -> None:
    openai_fake.script(Reply.of_text("Fine."))
    response = client.responses.create(
        model="openai-agent",
        input=[
            {"role": "user", "content": "Hi"},
            {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "opaque"},
            {"role": "assistant", "content": "Hello."},
            {"role": "user", "content": "Again"},
        ],
        include=["reasoning.encrypted_content"],
        store=False,
        safety_identifier=user_id,
    )

    assert response.output_text == "Fine."
    assert received("openai", openai_fake.last).turns == [
        ("user", "Hi"),
        ("assistant", "Hello."),
        ("user", "Again"),
    ]


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_thinking_goes_out_as_a_reasoning_item_and_comes_back_signed(
    stream: bool, client: openai.OpenAI, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    """What Codex does with store false: the reasoning item (encrypted_content) is sent
    back with the function call's output, and Anthropic gets its signed thinking again."""
    fake = fakes["anthropic"]
    fake.script(
        Reply.of_tool_calls(("get_weather", {"city": "Oslo"}), thinking="A tool knows."),
        Reply.of_text("Cold."),
    )
    options: dict[str, Any] = {
        "model": "anthropic-agent",
        "tools": [WEATHER],
        "reasoning": {"effort": "medium"},
        "include": ["reasoning.encrypted_content"],
        "store": False,
        "safety_identifier": user_id,
    }
    question = [{"role": "user", "content": "Weather in Oslo?"}]

    first: Response
    if stream:
        with client.responses.stream(input=question, **options) as events:
            first = events.get_final_response()
    else:
        first = client.responses.create(input=question, **options)

    assert [item.type for item in first.output] == ["reasoning", "function_call"]
    reasoning = first.output[0]
    assert reasoning.type == "reasoning" and reasoning.summary[0].text == "A tool knows."
    call = first.output[1]
    assert call.type == "function_call"
    final = client.responses.create(
        input=[
            *question,
            *[item.model_dump(exclude_none=True) for item in first.output],
            {"type": "function_call_output", "call_id": call.call_id, "output": "-3 °C"},
        ],
        **options,
    )

    assert final.output_text == "Cold."
    assistant = fake.last.body["messages"][1]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "A tool knows.",
        "signature": thinking_signature("A tool knows."),
    }
    assert "thinking" in fake.last.body


@pytest.mark.parametrize("previous", ["resp_\ud800", "resp_\x00", "x" * 300, "a/b"])
def test_a_previous_response_id_that_cannot_be_an_id_is_not_found(
    gateway: GatewayServer, openai_fake: FakeUpstream, previous: str
) -> None:
    body = {"model": "openai-agent", "input": "Hi", "user": "u", "previous_response_id": previous}

    response = httpx.post(
        f"{gateway.url}/v1/responses",
        content=json.dumps(body).encode(),
        headers={"Content-Type": "application/json"},
    )

    assert response.status_code == 404, response.text
    assert response.json()["error"]["code"] == "previous_response_not_found"
    assert "Traceback" not in "".join(gateway.log()[-20:])
