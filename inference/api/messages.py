"""The Anthropic Messages API (docs/messages.md): ``POST /v1/messages`` over the same turn
as chat completions, and ``POST /v1/messages/count_tokens``. Errors on these routes are
in Anthropic's shape (``ApiError.response``)."""

import json
import logging

from django.http import HttpResponse, HttpResponseBase
from ninja import Router

from agents.schema import AgentConfig, Config
from inference.api.context import InferenceRequest
from inference.api.responses import DROPPED_TOOLS_HEADER
from inference.api.serve import json_response, serve
from inference.errors import ApiError
from inference.ledger.tokens import estimate_tokens
from inference.providers.anthropic_format import AnthropicProvider
from inference.providers.base import ProviderError
from inference.providers.types import ChatRequest
from inference.turn.preparation import live_config
from inference.wire.messages_in import (
    CountTokensIn,
    MessagesIn,
    from_messages,
    read_conversation,
    read_tools,
)
from inference.wire.messages_out import MessagesReply

logger = logging.getLogger("gateway.inference")
router = Router()


@router.post("")
async def create_message(request: InferenceRequest, payload: MessagesIn) -> HttpResponseBase:
    _answering_agent(request, payload.model)
    read = from_messages(
        payload,
        request.headers.get("X-User-Id"),
        request.bound_user,
        request.headers.get("anthropic-beta"),
        keyed=request.api_key is not None,
    )
    response = await serve(request, read.client, MessagesReply(), id_prefix="msg_")
    if read.dropped_tools:
        response[DROPPED_TOOLS_HEADER] = ", ".join(read.dropped_tools)
    return response


@router.post("/count_tokens")
async def count_tokens(request: InferenceRequest, payload: CountTokensIn) -> HttpResponse:
    """What the agent's upstream would be sent: its preamble, and the request's system,
    messages and tools. Anthropic counts for its agents; the others are estimated. No
    user, no history, nothing billed."""
    config, agent = _answering_agent(request, payload.model)
    system, _, messages = read_conversation(payload)
    tools, _ = read_tools(payload.tools or [])
    prompt = "\n\n".join(part for part in (agent.preamble, *system) if part.strip())
    estimate = estimate_tokens(
        prompt
        + "".join(message.content for message in messages)
        + "".join(json.dumps([tool.name, tool.description, tool.parameters]) for tool in tools)
    )
    provider = request.runtime.engine.providers.provider(agent.provider, config)
    if not isinstance(provider, AnthropicProvider):
        return json_response({"input_tokens": estimate})
    upstream = ChatRequest(model=agent.model, system=prompt, messages=tuple(messages), tools=tools)
    try:
        counted = await provider.count_tokens(upstream)
    except ProviderError as error:
        logger.warning("count_tokens: %s; answered with the estimate", error)
        counted = estimate
    return json_response({"input_tokens": counted})


def _answering_agent(request: InferenceRequest, model: str) -> tuple[Config, AgentConfig]:
    """The live config and the agent ``model`` names (an experiment's first variant), or
    404 as Anthropic answers an unknown model."""
    holder = request.runtime.holder
    config = live_config(holder.config, holder.problems)
    experiment = config.experiment(model)
    agent = config.agent(experiment.variants[0].agent if experiment is not None else model)
    if agent is None:
        raise ApiError(
            404, f"model: no agent or experiment is named '{model}'", code="model_not_found"
        )
    return config, agent
