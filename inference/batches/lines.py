"""One line of a batch, run as a request of the batch's caller through the same path as
a live one (its dialect's reader, the turn or the embeddings call, admission, the
ledger), stateless: no history read or written, no memory recalled or extracted, never
streamed. Its ledger rows are of kind ``batch``. A refusal or an upstream failure is the
line's outcome, in its dialect's error shape; only a ``rate_limit_exceeded`` refusal is
raised, for the runner to wait and send the line again."""

import time
import uuid
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ValidationError

from agents.schema import Config
from core.requestlog import RequestLog
from inference.dialects.chat.body import ChatCompletionIn
from inference.dialects.chat.reader import from_chat_completion
from inference.dialects.chat.reply import ChatCompletionReply
from inference.dialects.embeddings.wire import EmbeddingsIn, embeddings_body, read_inputs
from inference.dialects.messages.body import MessagesIn
from inference.dialects.messages.errors import anthropic_error
from inference.dialects.messages.reader import from_messages
from inference.dialects.messages.reply import MessagesReply
from inference.dialects.responses.body import ResponsesIn
from inference.dialects.responses.reader import from_responses
from inference.dialects.responses.reply import ResponsesReply, echo
from inference.engine import Engine
from inference.money.keys import KeyGrant
from inference.neutral.errors import ApiError, invalid_request
from inference.neutral.reply import ReplyFormat, ReplyHeader
from inference.neutral.request import Claims, ClientRequest
from inference.serving.body_errors import body_error
from inference.serving.errors import openai_error
from inference.turn.embeddings import embed_for_user, embedder_of
from inference.turn.preparation import prepare_turn
from inference.turn.runner import TurnRunner

CHAT, RESPONSES, EMBEDDINGS, MESSAGES = (
    "/v1/chat/completions",
    "/v1/responses",
    "/v1/embeddings",
    "/v1/messages",
)
ENDPOINTS = (CHAT, RESPONSES, EMBEDDINGS)  # what /v1/batches runs


@dataclass(frozen=True)
class LineCaller:
    """Whom a batch's lines are requests of: its user, and the key it was created with."""

    user_id: str
    key: KeyGrant | None


@dataclass(frozen=True)
class LineOutcome:
    """The response a line got (``status_code`` and ``body``, in its endpoint's dialect),
    and, when it failed, the error's code and message; what it cost."""

    status_code: int
    body: dict[str, Any]
    request_id: str
    error_code: str = ""
    error_message: str = ""
    cost_micro_usd: int = 0

    @property
    def succeeded(self) -> bool:
        return self.status_code == 200


class RateLimited(Exception):
    """The caller's ``rpm`` or ``tpm`` refused the line: send it again in ``wait`` s."""

    def __init__(self, wait: float) -> None:
        super().__init__(f"rate limited, retry in {wait} s")
        self.wait = wait


async def run_line(
    endpoint: str, body: dict[str, Any], caller: LineCaller, config: Config, engine: Engine
) -> LineOutcome:
    request_id = uuid.uuid4().hex
    log = RequestLog(request_id=request_id, method="BATCH", path=endpoint, dialect="batch")
    started = time.perf_counter()
    try:
        return await _answer(endpoint, body, caller, config, engine, log)
    except ApiError as error:
        if error.status == 429 and error.code == "rate_limit_exceeded":
            raise RateLimited(float(error.headers.get("Retry-After", "1"))) from error
        log.status, log.error = error.status, error.code or error.error_type
        return refused(endpoint, error, request_id, _cost(log))
    finally:
        log.latency_ms = round((time.perf_counter() - started) * 1000, 2)
        log.emit()


def refused(endpoint: str, error: ApiError, request_id: str, cost: int = 0) -> LineOutcome:
    """A line's outcome when ``error`` refused it, in its endpoint's error shape."""
    shape = anthropic_error if endpoint == MESSAGES else openai_error
    status, body = shape(error)
    return LineOutcome(
        status, body, request_id, error.code or error.error_type, error.message, cost
    )


async def _answer(
    endpoint: str,
    body: dict[str, Any],
    caller: LineCaller,
    config: Config,
    engine: Engine,
    log: RequestLog,
) -> LineOutcome:
    max_tools = config.limits.max_tools
    user = caller.user_id
    reply: ReplyFormat
    if endpoint == EMBEDDINGS:
        return await _embeddings(
            _parsed(EmbeddingsIn, body, "model and input"), caller, config, engine, log
        )
    if endpoint == CHAT:
        chat = _parsed(ChatCompletionIn, body, "model and messages")
        client = from_chat_completion(chat, bound_user=user, max_tools=max_tools)
        reply, prefix = ChatCompletionReply(), "chatcmpl-"
    elif endpoint == RESPONSES:
        asked = _parsed(ResponsesIn, body, "model and input")
        if asked.previous_response_id is not None:
            raise invalid_request(
                "previous_response_id: a batch's requests are stateless",
                param="previous_response_id",
            )
        read = from_responses(asked, None, user, None, max_tools)
        client = read.client
        reply, prefix = ResponsesReply(echo(asked), read.namespaces, None), "resp_"
    else:
        message = _parsed(MessagesIn, body, "model, messages and max_tokens")
        client = from_messages(message, None, user, None, max_tools=max_tools)
        reply, prefix = MessagesReply(), "msg_"
    return await _turn(_stateless(client), reply, prefix, caller, config, engine, log)


def _parsed[B: BaseModel](model: type[B], body: dict[str, Any], required: str) -> B:
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise body_error([dict(item) for item in error.errors()], required) from error


def _stateless(client: ClientRequest) -> ClientRequest:
    """The request without history or memory (``metadata.history: "off"``), answered
    whole."""
    metadata = {**(client.metadata or {}), "history": "off"}
    return replace(client, metadata=metadata, stream=False)


async def _turn(
    client: ClientRequest,
    reply: ReplyFormat,
    prefix: str,
    caller: LineCaller,
    config: Config,
    engine: Engine,
    log: RequestLog,
) -> LineOutcome:
    turn = await prepare_turn(
        client, config, engine, log, id_prefix=prefix, key=caller.key, purpose="batch"
    )
    replied = await TurnRunner(config, engine, log).complete(turn)
    header = ReplyHeader(turn.completion_id, turn.created, turn.requested_model)
    body = reply.body(header, replied.answer)
    await reply.finished(body)
    log.status = 200
    return LineOutcome(200, body, log.request_id, cost_micro_usd=_cost(log))


async def _embeddings(
    asked: EmbeddingsIn, caller: LineCaller, config: Config, engine: Engine, log: RequestLog
) -> LineOutcome:
    embedder = embedder_of(config, asked.model, "model")
    claims = Claims(user=asked.user, bound_user=caller.user_id)
    embedded = await embed_for_user(
        read_inputs(asked), embedder, claims, caller.key, config, engine, log, purpose="batch"
    )
    body = embeddings_body(asked.model, embedded.vectors, embedded.usage, asked.encoding_format)
    log.status = 200
    return LineOutcome(200, body, log.request_id, cost_micro_usd=_cost(log))


def _cost(log: RequestLog) -> int:
    return round((log.cost_usd or 0) * 1e6)
