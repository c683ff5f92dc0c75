"""The neutral provider request of a turn (docs/api.md, "System prompt").

System prompt order: agent preamble, the agent's skills (a line each, docs/skills.md),
what the agent remembers of the user (docs/memory.md), language instruction, the
request's own system messages, structured-output instruction. The conversation comes
ready: stored history (if any), then the request's messages with the tool names the
provider knows.
"""

from agents.schema import AgentConfig, Config
from inference.neutral.request import ClientRequest
from inference.neutral.types import ChatRequest, Message
from inference.structured.instruction import structured_output_instruction
from inference.tools.skills import skills_prompt
from inference.tools.toolbox import Toolbox
from inference.turn.options import RequestOptions, language_instruction


def build_chat_request(
    agent: AgentConfig,
    config: Config,
    client: ClientRequest,
    options: RequestOptions,
    conversation: list[Message],
    toolbox: Toolbox,
    memories: str = "",
) -> ChatRequest:
    system_parts = [agent.preamble, skills_prompt(agent, config), memories]
    if options.language is not None:
        system_parts.append(language_instruction(options.language))
    system_parts.extend(client.system)
    if client.response_format is not None:
        system_parts.append(structured_output_instruction(client.response_format))
    return ChatRequest(
        model=agent.model,
        system="\n\n".join(part for part in system_parts if part.strip()),
        messages=tuple(conversation),
        sampling=client.sampling,
        tools=toolbox.specs,
        tool_choice=toolbox.choice(client.tools.choice),
        parallel_tool_calls=client.tools.parallel if toolbox.specs else None,
        response_format=client.response_format,
        system_cache_control=client.system_cache_control,
    )
