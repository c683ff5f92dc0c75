"""The request pipeline of ``POST /v1/chat/completions`` (DESIGN 4.1).

identify user → parse metadata → check token budgets → require a user message →
resolve agent → build messages → call the provider (``enforcement`` validates and
repairs structured output) → record usage and history → respond. Database work is
batched: one worker-thread call before the provider call (budgets + history), one
after it (ledger + history).
"""

import time
import uuid
from dataclasses import dataclass
from datetime import datetime

from django.db import transaction
from django.utils import timezone

from agents.schema import AgentConfig, Config, HistoryConfig
from core.requestlog import RequestLog
from inference.budgets import check_budgets
from inference.database import in_database
from inference.errors import ApiError, invalid_request
from inference.history import exchange_rows, load_history
from inference.identity import resolve_user_id
from inference.models import LedgerEntry, StoredMessage
from inference.options import TokenCap, parse_options
from inference.prompt import build_chat_request, client_manages_history, last_user_text
from inference.providers.types import ChatRequest, ChatResponse, Message, Usage
from inference.schemas import ChatCompletionIn
from inference.structured import parse_response_format
from inference.tokens import estimate_tokens


@dataclass(frozen=True)
class Turn:
    """Everything decided before the provider is called."""

    completion_id: str
    created: int
    user_id: str
    requested_model: str
    agent: AgentConfig
    request: ChatRequest
    user_text: str
    include_usage: bool


async def prepare_turn(body: ChatCompletionIn, config: Config, log: RequestLog) -> Turn:
    user_id = resolve_user_id(body, config)
    log.user = user_id
    options = parse_options(body.metadata)
    response_format = parse_response_format(body.response_format)
    history = await in_database(
        _check_budgets_and_load_history,
        user_id,
        body.model,
        options.caps,
        config.history,
        not client_manages_history(body),
    )
    user_text = last_user_text(body)
    if user_text is None:
        raise invalid_request(
            "messages must contain at least one message with role 'user'",
            param="messages",
            code="missing_user_message",
        )
    agent = config.agent(body.model)
    if agent is None:
        raise invalid_request(
            f"Unknown model '{body.model}': it is not an agent of this gateway (see GET /v1/models)",
            param="model",
            code="model_not_found",
        )
    log.agent, log.provider = agent.name, agent.provider
    return Turn(
        completion_id=f"chatcmpl-{uuid.uuid4().hex}",
        created=int(time.time()),
        user_id=user_id,
        requested_model=body.model,
        agent=agent,
        request=build_chat_request(agent, body, options, history, response_format),
        user_text=user_text,
        include_usage=bool(body.stream_options and body.stream_options.include_usage),
    )


def _check_budgets_and_load_history(
    user_id: str,
    model: str,
    caps: tuple[TokenCap, ...],
    limits: HistoryConfig,
    wants_history: bool,
) -> list[Message]:
    check_budgets(user_id, caps, timezone.now())
    return load_history(user_id, model, limits) if wants_history else []


def billed_usage(turn: Turn, reply: str, reported: Usage) -> Usage:
    """The provider's usage, or an estimate when it reported none (e.g. a cut stream)."""
    if reported.total_tokens:
        return reported
    prompt = turn.request.system + "".join(message.content for message in turn.request.messages)
    return Usage(prompt_tokens=estimate_tokens(prompt), completion_tokens=estimate_tokens(reply))


def _record(turn: Turn, usage: Usage, reply: str | None, now: datetime) -> None:
    with transaction.atomic():
        LedgerEntry.objects.create(
            user_id=turn.user_id,
            agent=turn.agent.name,
            provider=turn.agent.provider,
            completion_id=turn.completion_id,
            prompt_tokens=usage.prompt_tokens,
            completion_tokens=usage.completion_tokens,
            total_tokens=usage.total_tokens,
            created_at=now,
        )
        if reply is not None:
            StoredMessage.objects.bulk_create(
                exchange_rows(turn.user_id, turn.requested_model, turn.user_text, reply)
            )


async def record_turn(turn: Turn, usage: Usage, reply: str | None) -> None:
    """Bill the turn; store the exchange in history unless it produced no reply (``None``)."""
    await in_database(_record, turn, usage, reply, timezone.now())


def completion_body(turn: Turn, response: ChatResponse, usage: Usage) -> dict:
    return {
        "id": turn.completion_id,
        "object": "chat.completion",
        "created": turn.created,
        "model": turn.requested_model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": response.text, "refusal": None},
                "finish_reason": response.finish_reason,
                "logprobs": None,
            }
        ],
        "usage": usage_body(usage),
    }


def usage_body(usage: Usage) -> dict:
    return {
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "total_tokens": usage.total_tokens,
    }


def config_or_503(config: Config | None, problems: list[str]) -> Config:
    if config is None:
        detail = "; ".join(problems) or "no config file loaded"
        raise ApiError(503, f"The gateway has no valid config: {detail}", code="config_unavailable")
    return config
