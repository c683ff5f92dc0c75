"""pydantic-ai with a tool and its default structured output (a final_result tool),
against the gateway. Run by tests/e2e/test_frameworks.py in .venv-clients.

Usage: pydantic_ai_tools.py BASE_URL MODEL USER; prints {"output", "tool_calls"} as JSON.
"""

import json
import sys

from pydantic import BaseModel
from pydantic_ai import Agent
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider

base_url, model, user = sys.argv[1:4]
calls: list[str] = []


class Report(BaseModel):
    city: str
    celsius: int


agent = Agent(
    OpenAIChatModel(model, provider=OpenAIProvider(base_url=base_url, api_key="x")),
    output_type=Report,
    model_settings={"extra_body": {"safety_identifier": user}},
)


@agent.tool_plain
def get_weather(city: str) -> str:
    """Current weather of a city."""
    calls.append(city)
    return f"sunny in {city}, 21 C"


result = agent.run_sync("What is the weather in Paris?")
print(json.dumps({"output": result.output.model_dump(), "tool_calls": calls}))
