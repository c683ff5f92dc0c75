"""Agent frameworks as a team would point them at the gateway, each in its own process
(``.venv-clients``, set up by scripts/test): their tool calls and tool results go
through the gateway to a provider and back."""

import pytest

from tests.fakes.base import FakeUpstream, Reply
from tests.frameworks import run_client
from tests.server import GatewayServer
from tests.upstreams import sent_tool_calls_and_results

pytestmark = pytest.mark.clients


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_openai_agents_sdk_runs_a_function_tool_through_the_gateway(
    kind: str, gateway: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(
        Reply.of_tool_calls(("get_weather", {"city": "Paris"})),
        Reply.of_text("It is sunny in Paris."),
    )

    outcome = run_client("agents_sdk_tools.py", gateway, f"{kind}-agent", user_id)

    assert outcome == {"output": "It is sunny in Paris.", "tool_calls": ["Paris"]}
    _, results = sent_tool_calls_and_results(kind, fakes[kind].last.body)
    assert results[0][1] == "sunny in Paris, 21 C"


@pytest.mark.parametrize("kind", ["openai", "gemini"])
def test_pydantic_ai_tool_and_structured_output_go_through_the_gateway(
    kind: str, gateway: GatewayServer, fakes: dict[str, FakeUpstream], user_id: str
) -> None:
    fakes[kind].script(
        Reply.of_tool_calls(("get_weather", {"city": "Paris"})),
        Reply.of_tool_calls(("final_result", {"city": "Paris", "celsius": 21})),
    )

    outcome = run_client("pydantic_ai_tools.py", gateway, f"{kind}-agent", user_id)

    assert outcome == {"output": {"city": "Paris", "celsius": 21}, "tool_calls": ["Paris"]}
    calls, _ = sent_tool_calls_and_results(kind, fakes[kind].requests[1].body)
    assert [call[1] for call in calls] == ["get_weather"]
