"""How a dialect answers one line of a batch (docs/batches.md): the line's body read as
that dialect reads a live request's, answered through the same turn (or embeddings call)
for the batch's caller, stateless (no history read or written, no memory recalled or
extracted) and never streamed, billed as kind ``batch``. A dialect that batches can run
declares it in its record (``Dialect.batch_lines``); the batch runner finds it by path
through the registry."""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, replace
from typing import Any

from pydantic import BaseModel, ValidationError

from agents.schema import Config
from core.requestlog import RequestLog
from inference.engine import Engine
from inference.money.keys import KeyGrant
from inference.neutral.reply import ReplyFormat, ReplyHeader
from inference.neutral.request import ClientRequest
from inference.serving.body_errors import body_error
from inference.serving.errors import ErrorShape
from inference.turn.preparation import prepare_turn
from inference.turn.runner import TurnRunner


@dataclass(frozen=True)
class LineCaller:
    """Whom a batch's lines are requests of: its user, and the key it was created with."""

    user_id: str
    key: KeyGrant | None


# A line's body answered for its caller: the response body (an ``ApiError`` refuses it).
type Answer = Callable[
    [dict[str, Any], LineCaller, Config, Engine, RequestLog], Awaitable[dict[str, Any]]
]


@dataclass(frozen=True)
class BatchLines:
    """What a dialect answers as a batch's line: requests to ``path``, with ``answer``,
    refused in ``error_shape``. ``embedders``: its ``model`` names an embedder (else an
    agent or an experiment); ``openai``: ``/v1/batches`` runs it (else only its own
    dialect's batches, as ``/v1/messages/batches`` runs ``/v1/messages``)."""

    path: str
    answer: Answer
    error_shape: ErrorShape
    embedders: bool = False
    openai: bool = True


def parsed[B: BaseModel](model: type[B], body: dict[str, Any], required: str) -> B:
    """``body`` as the dialect's route would parse it (400 as it would refuse it)."""
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise body_error([dict(item) for item in error.errors()], required) from error


async def answer_turn(
    client: ClientRequest,
    reply: ReplyFormat,
    id_prefix: str,
    caller: LineCaller,
    config: Config,
    engine: Engine,
    log: RequestLog,
) -> dict[str, Any]:
    """The reply body of ``client``'s turn, run for the batch's caller, stateless."""
    metadata = {**(client.metadata or {}), "history": "off"}
    client = replace(client, metadata=metadata, stream=False)
    turn = await prepare_turn(
        client, config, engine, log, id_prefix=id_prefix, key=caller.key, purpose="batch"
    )
    replied = await TurnRunner(config, engine, log).complete(turn)
    body = reply.body(
        ReplyHeader(turn.completion_id, turn.created, turn.requested_model), replied.answer
    )
    await reply.finished(body)
    return body
