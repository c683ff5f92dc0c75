"""How many input tokens an agent's upstream would be sent for a request: the agent's
preamble, and the request's system part, messages and tools. The provider counts where
it can (Anthropic), asked through routing like any call to it (its deployments, retries
and circuit breakers); for the others, and when the count fails, it is estimated. No
user, no history, nothing billed (docs/messages.md, "count_tokens")."""

import json
import logging
from collections.abc import Sequence

from agents.schema import AgentConfig, Config
from inference.engine import Engine
from inference.neutral.tokens import estimate_tokens
from inference.neutral.types import ChatRequest, Message, ToolSpec
from inference.providers.base import ProviderError
from inference.routing.deployments import route_of
from inference.routing.upstream import RoutedCalls

logger = logging.getLogger("gateway.inference")


async def prompt_tokens(
    agent: AgentConfig,
    system: Sequence[str],
    messages: Sequence[Message],
    tools: tuple[ToolSpec, ...],
    config: Config,
    engine: Engine,
) -> int:
    prompt = "\n\n".join(part for part in (agent.preamble, *system) if part.strip())
    request = ChatRequest(model=agent.model, system=prompt, messages=tuple(messages), tools=tools)
    try:
        counted = await RoutedCalls(route_of(agent), config, engine).count_tokens(request)
    except ProviderError as error:
        logger.warning("count_tokens: %s; answered with the estimate", error)
        counted = None
    if counted is not None:
        return counted
    return estimate_tokens(
        prompt
        + "".join(message.content for message in messages)
        + "".join(json.dumps([tool.name, tool.description, tool.parameters]) for tool in tools)
    )
