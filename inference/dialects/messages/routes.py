"""The Anthropic Messages API (docs/messages.md): ``POST /v1/messages`` over the same turn
as chat completions, and ``POST /v1/messages/count_tokens``."""

from django.http import HttpResponse, HttpResponseBase

from agents.schema import AgentConfig, Config
from inference.dialects.messages.body import CountTokensIn, MessagesIn
from inference.dialects.messages.reader import from_count_tokens, from_messages
from inference.dialects.messages.reply import MessagesReply
from inference.neutral.errors import ApiError
from inference.serving.context import InferenceRequest, limits_of
from inference.serving.routes import dialect_api
from inference.serving.serve import json_response, serve
from inference.turn.counting import prompt_tokens
from inference.turn.preparation import checked_tools, live_config


def _required(path: str) -> str:
    if path.endswith("/count_tokens"):
        return "model and messages"
    if path.startswith("/v1/messages/batches"):
        return "requests"
    return "model, messages and max_tokens"


api = dialect_api("messages", _required)


@api.post("/v1/messages")
async def create_message(request: InferenceRequest, payload: MessagesIn) -> HttpResponseBase:
    _answering_agent(request, payload.model, generating=True)
    client = from_messages(
        payload,
        request.headers.get("X-User-Id"),
        request.bound_user,
        request.headers.get("anthropic-beta"),
        max_tools=limits_of(request).max_tools,
    )
    return await serve(request, client, MessagesReply(), id_prefix="msg_")


@api.post("/v1/messages/count_tokens")
async def count_tokens(request: InferenceRequest, payload: CountTokensIn) -> HttpResponse:
    """What the agent's upstream would be sent (``inference.turn.counting``)."""
    config, agent = _answering_agent(request, payload.model)
    client = from_count_tokens(payload, config.limits.max_tools)
    await checked_tools(client.tools)
    engine = request.runtime.engine
    counted = await prompt_tokens(
        agent, client.system, client.messages, client.tools.specs, config, engine
    )
    return json_response({"input_tokens": counted})


def _answering_agent(
    request: InferenceRequest, model: str, *, generating: bool = False
) -> tuple[Config, AgentConfig]:
    """The live config and the agent ``model`` names (an experiment's first variant), or
    404 as Anthropic answers an unknown model. A model the request's key may not call is
    403 ``permission_error`` when ``generating`` (as on chat), else unknown."""
    holder = request.runtime.holder
    config = live_config(holder.config, holder.problems)
    target = config.target(model)
    if generating and request.api_key is not None:
        request.api_key.check_allows(target)
    experiment = config.experiment(target)
    agent = config.agent(experiment.variants[0].agent if experiment is not None else target)
    key = request.api_key
    if agent is None or (key is not None and not key.allows(target)):
        raise ApiError(
            404, f"model: no agent or experiment is named '{model}'", code="model_not_found"
        )
    return config, agent
