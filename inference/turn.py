"""Everything decided about a turn before the model is called (DESIGN 4.1).

identify the user → parse metadata limits and language → check token budgets and load
what the database holds for the turn (history, stored tool exchanges) in one call →
require a user message → resolve the agent → gather its tools → build the request.
"""

import time
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.utils import timezone

from agents.schema import AgentConfig, Config, HistoryConfig
from core.requestlog import RequestLog
from inference.budgets import check_budgets
from inference.client_request import ClientRequest
from inference.database import in_database
from inference.engine import Engine
from inference.errors import ApiError, invalid_request
from inference.exchanges import load_exchanges, with_exchanges
from inference.history import load_history
from inference.identity import resolve_user_id
from inference.options import TokenCap, parse_options
from inference.prompt import build_chat_request
from inference.providers.base import Provider
from inference.providers.types import ChatRequest, Message
from inference.toolloop import Exchange
from inference.tools import Toolbox, build_toolbox


@dataclass(frozen=True)
class Turn:
    completion_id: str
    created: int
    user_id: str
    requested_model: str  # what the client sent as model: history is kept under it
    agent: AgentConfig
    provider: Provider
    toolbox: Toolbox
    request: ChatRequest
    user_text: str
    include_usage: bool


async def prepare_turn(
    client: ClientRequest, config: Config, engine: Engine, log: RequestLog
) -> Turn:
    user_id = resolve_user_id(client, config)
    log.user = user_id
    options = parse_options(client.metadata)
    call_ids = [call.id for message in client.messages for call in message.tool_calls]
    history, exchanges = await in_database(
        _before_the_call,
        user_id,
        client.model,
        options.caps,
        config.history,
        not client.manages_history,
        call_ids,
        timezone.now(),
    )
    if client.user_text is None:
        raise invalid_request(
            "messages must contain at least one message with role 'user'",
            param="messages",
            code="missing_user_message",
        )
    agent = resolve_agent(config, client.model)
    log.agent, log.provider = agent.name, agent.provider
    provider = engine.providers.provider(agent.provider, config.providers[agent.provider])
    toolbox = await build_toolbox(agent, config, engine.mcp, client.tools, provider.tool_names)
    own = with_exchanges(tuple(toolbox.to_provider(m) for m in client.messages), exchanges)
    return Turn(
        completion_id=f"chatcmpl-{uuid.uuid4().hex}",
        created=int(time.time()),
        user_id=user_id,
        requested_model=client.model,
        agent=agent,
        provider=provider,
        toolbox=toolbox,
        request=build_chat_request(agent, client, options, [*history, *own], toolbox),
        user_text=client.user_text,
        include_usage=client.include_usage,
    )


def resolve_agent(config: Config, model: str) -> AgentConfig:
    agent = config.agent(model)
    if agent is None:
        raise invalid_request(
            f"Unknown model '{model}': it is not an agent of this gateway (see GET /v1/models)",
            param="model",
            code="model_not_found",
        )
    return agent


def live_config(config: Config | None, problems: list[str]) -> Config:
    if config is None:
        detail = "; ".join(problems) or "no config file loaded"
        raise ApiError(503, f"The gateway has no valid config: {detail}", code="config_unavailable")
    return config


def _before_the_call(
    user_id: str,
    model: str,
    caps: tuple[TokenCap, ...],
    limits: HistoryConfig,
    wants_history: bool,
    call_ids: list[str],
    now: datetime,
) -> tuple[list[Message], dict[str, Exchange]]:
    check_budgets(user_id, caps, now)
    history = load_history(user_id, model, limits) if wants_history else []
    return history, load_exchanges(user_id, call_ids, now)
