"""The OpenAI Agents SDK, Chat Completions model, running an agent with one function tool
against the gateway. Run by tests/e2e/test_frameworks.py in .venv-clients.

Usage: agents_sdk_tools.py BASE_URL MODEL USER; prints {"output", "tool_calls"} as JSON.
"""

import json
import sys

from agents import (
    Agent,
    ModelSettings,
    OpenAIChatCompletionsModel,
    Runner,
    function_tool,
    set_tracing_disabled,
)
from openai import AsyncOpenAI

base_url, model, user = sys.argv[1:4]
calls: list[str] = []


@function_tool
def get_weather(city: str) -> str:
    """Current weather of a city."""
    calls.append(city)
    return f"sunny in {city}, 21 C"


set_tracing_disabled(True)
agent = Agent(
    name="weather",
    instructions="Answer with the weather tool.",
    model=OpenAIChatCompletionsModel(
        model=model, openai_client=AsyncOpenAI(base_url=base_url, api_key="x")
    ),
    model_settings=ModelSettings(extra_body={"safety_identifier": user}),
    tools=[get_weather],
)
result = Runner.run_sync(agent, "What is the weather in Paris?")
print(json.dumps({"output": result.final_output, "tool_calls": calls}))
