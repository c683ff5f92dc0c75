"""The tool loop in process: the real OpenAI-format provider module against the fake
OpenAI upstream on a loopback socket, through routing and money's meter (the seam's
innermost and outermost layers), with the agent's own tools run by a test function (the
loop's ``run_tool``)."""

import json
import random
from collections.abc import AsyncIterator, Callable
from types import SimpleNamespace
from typing import Any

import pytest

from agents.schema import Config, LimitsConfig
from inference.money.caller import Caller
from inference.money.meter import Meter, MeteredCalls
from inference.money.prices import price_of
from inference.neutral.types import (
    ChatRequest,
    Message,
    ResponseFormat,
    TextDelta,
    ToolCall,
    ToolSpec,
    Usage,
)
from inference.providers.base import ProviderError, TurnStopped
from inference.providers.registry import ProviderClients
from inference.routing.circuits import Circuits
from inference.routing.deployments import route_of
from inference.routing.upstream import RoutedCalls
from inference.tools.bounds import CallAllowance
from inference.tools.loop import MAX_TOOL_ROUNDS, ToolLoop
from inference.tools.toolbox import AgentTool, Toolbox
from tests.fakes.base import Reply
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.upstreams import fake_base_url

# The fake's default usage, at the price the config gives the model (1 and 2 USD per
# million input and output tokens): 11 + 14 micro-USD.
ROUND = Usage(prompt_tokens=11, completion_tokens=7, cost_micro_usd=25)
LOOKUP = ToolSpec("lookup", "Look a word up.", {"type": "object", "properties": {}})
WEATHER = ToolSpec("get_weather", "The client's tool.", {"type": "object", "properties": {}})
OWN = Toolbox(specs=(LOOKUP,), agent_tools={"lookup": AgentTool("mcp", "lookup", "words")})
OWN_AND_CLIENT = Toolbox(
    specs=(LOOKUP, WEATHER),
    agent_tools=OWN.agent_tools,
    client_names={"get_weather": "get_weather"},
)
PERSON = ResponseFormat(
    kind="json_schema",
    schema={"type": "object", "properties": {"name": {"type": "string"}}, "required": ["name"]},
    name="person",
)


type Connect = Callable[[CallAllowance], MeteredCalls]


@pytest.fixture
async def provider(openai_fake: OpenAIUpstream) -> AsyncIterator[Connect]:
    """The calls of a loop under a given allowance: the one OpenAI deployment, no
    retries, metered for a caller without limits."""
    clients = ProviderClients()
    config = Config.model_validate(
        {
            "providers": {
                "openai": {
                    "api_key": "k",
                    "base_url": fake_base_url(openai_fake),
                    "retries": {"attempts": 0},
                }
            },
            "agents": [{"name": "a", "provider": "openai", "model": "gpt-test"}],
            "pricing": {"openai/gpt-test": {"input": 1.0, "output": 2.0}},
        }
    )
    route = route_of(config.agents[0])

    def connect(allowance: CallAllowance) -> MeteredCalls:
        engine = SimpleNamespace(providers=clients, circuits=Circuits(), rng=random.Random())
        routed = RoutedCalls(route, config, engine, allowance)
        return MeteredCalls(routed, Meter(Caller("u")), price_of(config, "openai", "gpt-test"))

    yield connect
    await clients.aclose()


def looping(
    connect: Connect, toolbox: Toolbox, *args: Any, bounds: CallAllowance, **options: Any
) -> ToolLoop:
    return ToolLoop(connect(bounds), toolbox, *args, allowance=bounds, **options)


def billed(loop: ToolLoop) -> Usage:
    """What the loop's calls were billed (its meter's)."""
    assert isinstance(loop.calls, MeteredCalls)
    return loop.calls.meter.billed()


def limits(**settings: float) -> CallAllowance:
    """The allowance of a turn under ``limits`` (the config's defaults where not given)."""
    return CallAllowance(LimitsConfig.model_validate(settings))


def question(text: str = "Hello?", tools: Toolbox | None = None) -> ChatRequest:
    specs = tools.specs if tools is not None else ()
    user = (Message(role="user", content=text),)
    return ChatRequest(model="gpt-test", system="Be brief.", messages=user, tools=specs)


class ToolRuns:
    """The agent's own tools, as the loop runs them: each call and what it answered."""

    def __init__(self) -> None:
        self.calls: list[ToolCall] = []

    async def __call__(self, call: ToolCall) -> Message:
        self.calls.append(call)
        answer = f"result {len(self.calls)}"
        return Message(role="tool", content=answer, tool_call_id=call.id, name=call.name)


async def test_a_plain_answer_is_one_round(provider: Connect, openai_fake: OpenAIUpstream) -> None:
    openai_fake.script(Reply.of_text("Hi there."))
    loop = looping(provider, Toolbox(), bounds=limits())

    answer = await loop.complete(question())

    assert (answer.text, answer.tool_calls) == ("Hi there.", ())
    assert loop.spent == ROUND == billed(loop) and len(openai_fake.requests) == 1


async def test_own_tool_rounds_run_and_every_round_and_tool_is_billed(
    provider: Connect, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(
        Reply.of_tool_calls(("lookup", {"word": "a"}), ("lookup", {"word": "b"})),
        Reply.of_tool_calls(("lookup", {"word": "c"})),
        Reply.of_text("Done."),
    )
    tools = ToolRuns()
    loop = looping(provider, OWN, tools, bounds=limits())

    answer = await loop.complete(question(tools=OWN))

    assert answer.text == "Done."
    assert [json.loads(call.arguments) for call in tools.calls] == [
        {"word": "a"},
        {"word": "b"},
        {"word": "c"},
    ]
    assert loop.spent.total_tokens == 3 * ROUND.total_tokens
    assert billed(loop) == loop.spent
    sent = openai_fake.requests[-1].body["messages"]
    assert [m["content"] for m in sent if m["role"] == "tool"] == [
        "result 1",
        "result 2",
        "result 3",
    ]


async def test_a_round_with_a_client_tool_ends_the_turn_and_keeps_the_own_calls(
    provider: Connect, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(Reply.of_tool_calls(("lookup", {"word": "a"}), ("get_weather", {})))
    tools = ToolRuns()
    loop = looping(provider, OWN_AND_CLIENT, tools, bounds=limits())

    answer = await loop.complete(question(tools=OWN_AND_CLIENT))

    assert [call.name for call in answer.tool_calls] == ["get_weather"]
    assert answer.finish_reason == "tool_calls"
    assert loop.exchange is not None
    assert [call.name for call in loop.exchange.calls] == ["lookup"]
    assert [result.content for result in loop.exchange.results] == ["result 1"]
    assert len(openai_fake.requests) == 1


async def test_the_rounds_of_own_tools_are_limited(
    provider: Connect, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(*[Reply.of_tool_calls(("lookup", {}))] * (MAX_TOOL_ROUNDS + 1))
    loop = looping(provider, OWN, ToolRuns(), bounds=limits())

    with pytest.raises(ProviderError) as refused:
        await loop.complete(question(tools=OWN))

    assert refused.value.code == "tool_loop_limit"
    assert len(openai_fake.requests) == MAX_TOOL_ROUNDS + 1
    assert billed(loop).total_tokens == (MAX_TOOL_ROUNDS + 1) * ROUND.total_tokens


async def test_a_tool_the_agent_does_not_have_is_answered_as_an_error_to_the_model(
    provider: Connect, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(Reply.of_tool_calls(("rm_rf", {})), Reply.of_text("Sorry."))
    tools = ToolRuns()
    loop = looping(provider, OWN, tools, bounds=limits())

    assert (await loop.complete(question(tools=OWN))).text == "Sorry."
    assert tools.calls == []
    sent = openai_fake.requests[-1].body["messages"]
    assert sent[-1]["content"] == "Error: there is no tool named 'rm_rf'."


async def test_an_invalid_structured_reply_is_repaired(
    provider: Connect, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(
        Reply.of_text('{"nom": "Ada"}'), Reply.of_text('```json\n{"name": "Ada"}\n```')
    )
    loop = looping(provider, Toolbox(), response_format=PERSON, max_repairs=2, bounds=limits())

    answer = await loop.complete(question())

    assert answer.text == '{"name": "Ada"}'  # the fence stripped
    assert loop.spent.total_tokens == 2 * ROUND.total_tokens
    repair = openai_fake.requests[-1].body["messages"][-1]
    assert repair["role"] == "user" and "name" in repair["content"]


async def test_a_reply_still_invalid_after_the_repairs_is_an_error_billed_in_full(
    provider: Connect, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(*[Reply.of_text("not json")] * 3)
    loop = looping(provider, Toolbox(), response_format=PERSON, max_repairs=2, bounds=limits())

    with pytest.raises(ProviderError) as refused:
        await loop.complete(question())

    assert refused.value.code == "structured_output_invalid"
    assert billed(loop).total_tokens == 3 * ROUND.total_tokens


async def test_without_own_tools_a_stream_is_relayed_as_it_arrives(
    provider: Connect, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(Reply.of_chunks("Hel", "lo ", "there."))
    loop = looping(provider, Toolbox(), bounds=limits())

    assert loop.relays
    pieces = []
    async with loop.relayed(question()) as call:
        async for batch in call.events:
            pieces += [event.text for event in loop.shown(batch) if isinstance(event, TextDelta)]

    assert pieces == ["Hel", "lo ", "there."]
    assert loop.answer is not None and loop.answer.text == "Hello there."
    assert loop.spent == ROUND


async def test_with_own_tools_a_stream_holds_the_answer_until_the_final_round(
    provider: Connect, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(Reply.of_tool_calls(("lookup", {})), Reply.of_chunks("The ", "answer."))
    loop = looping(provider, OWN, ToolRuns(), bounds=limits())

    assert not loop.relays
    answer = await loop.held(question(tools=OWN))

    assert answer.text == "The answer."
    assert loop.spent.total_tokens == 2 * ROUND.total_tokens


async def test_the_turn_stops_at_its_model_call_cap_whatever_the_level(
    provider: Connect, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(*[Reply.of_tool_calls(("lookup", {}))] * 5)
    loop = looping(provider, OWN, ToolRuns(), bounds=limits(max_model_calls_per_turn=3))

    with pytest.raises(TurnStopped) as stopped:
        await loop.complete(question(tools=OWN))

    assert (stopped.value.status, stopped.value.code) == (502, "tool_loop_limit")
    assert len(openai_fake.requests) == 3
    assert billed(loop).total_tokens == 3 * ROUND.total_tokens


async def test_the_turn_stops_at_its_deadline_even_during_a_call(
    provider: Connect, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(Reply.of_text("Too late.", delay=5))
    loop = looping(provider, Toolbox(), bounds=limits(max_turn_seconds=0.2))

    with pytest.raises(TurnStopped) as stopped:
        await loop.complete(question())

    assert stopped.value.code == "tool_loop_limit"
    assert "max_turn_seconds" in stopped.value.message


async def test_the_work_is_called_off_between_calls_when_it_should_not_go_on(
    provider: Connect, openai_fake: OpenAIUpstream
) -> None:
    """An allowance's ``going_on`` (an evaluation's: still running?) is asked before each
    call, and its refusal ends the loop with no further call."""
    openai_fake.script(*[Reply.of_tool_calls(("lookup", {}))] * 5)
    asked: list[int] = []

    async def going_on() -> None:
        asked.append(len(openai_fake.requests))
        if len(asked) == 3:
            raise TurnStopped(409, "called off", code="evaluation_cancelled")

    bounds = CallAllowance(LimitsConfig(), going_on)
    loop = looping(provider, OWN, ToolRuns(), bounds=bounds)

    with pytest.raises(TurnStopped) as stopped:
        await loop.complete(question(tools=OWN))

    assert asked == [0, 1, 2]
    assert stopped.value.code == "evaluation_cancelled"
    assert len(openai_fake.requests) == 2


async def test_retries_stop_while_the_calls_left_are_needed_for_the_fallback(
    openai_fake: OpenAIUpstream,
) -> None:
    """Ten retries of a failing deployment under a cap of six calls would spend all six on
    it: the sixth is kept for the fallback, which answers."""
    openai_fake.answer_when(
        lambda recorded: recorded.body["model"] == "primary",
        Reply.of_error(503, {"error": {"message": "overloaded"}}),
    )
    config = Config.model_validate(
        {
            "providers": {
                "openai": {
                    "api_key": "k",
                    "base_url": fake_base_url(openai_fake),
                    "retries": {"attempts": 10, "backoff": 0},
                    "circuit": {"failures": 100},
                }
            },
            "agents": [
                {
                    "name": "a",
                    "provider": "openai",
                    "model": "primary",
                    "fallbacks": [{"provider": "openai", "model": "backup"}],
                }
            ],
        }
    )
    clients = ProviderClients()
    bounds = limits(max_model_calls_per_turn=6)
    engine = SimpleNamespace(providers=clients, circuits=Circuits(), rng=random.Random())
    upstream = RoutedCalls(route_of(config.agents[0]), config, engine, bounds)
    try:
        reply = await ToolLoop(upstream, Toolbox(), allowance=bounds).complete(question())
    finally:
        await clients.aclose()

    assert reply.text.startswith("You said")
    assert [recorded.body["model"] for recorded in openai_fake.requests] == [
        *["primary"] * 5,
        "backup",
    ]
