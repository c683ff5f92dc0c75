"""The OpenAI Agents SDK in its default mode (the Responses API), running an agent with
one function tool against the gateway. Run by tests/e2e/test_responses.py in
.venv-clients.

Usage: agents_sdk_responses.py BASE_URL MODEL USER; prints {"output", "tool_calls"}.
"""

import json
import sys

from openai import AsyncOpenAI

from agents import (
    Agent,
    ModelSettings,
    Runner,
    function_tool,
    set_default_openai_client,
    set_tracing_disabled,
)

base_url, model, user = sys.argv[1:4]
calls: list[str] = []


@function_tool
def get_weather(city: str) -> str:
    """Current weather of a city."""
    calls.append(city)
    return f"sunny in {city}, 21 C"


set_tracing_disabled(True)
set_default_openai_client(AsyncOpenAI(base_url=base_url, api_key="x"), use_for_tracing=False)
agent = Agent(
    name="weather",
    instructions="Answer with the weather tool.",
    model=model,
    model_settings=ModelSettings(extra_body={"safety_identifier": user}),
    tools=[get_weather],
)
result = Runner.run_sync(agent, "What is the weather in Paris?")
print(json.dumps({"output": result.final_output, "tool_calls": calls}))
