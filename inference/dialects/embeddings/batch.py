"""A batch's line to ``/v1/embeddings``: admitted and billed as a live request's, as
kind ``batch``."""

from typing import Any

from agents.schema import Config
from core.requestlog import RequestLog
from inference.dialects.embeddings.wire import EmbeddingsIn, embeddings_body, read_inputs
from inference.engine import Engine
from inference.neutral.request import Claims
from inference.serving.batchline import BatchLines, LineCaller, parsed
from inference.serving.errors import openai_error
from inference.turn.embeddings import embed_for_user, embedder_of


async def answer_line(
    body: dict[str, Any], caller: LineCaller, config: Config, engine: Engine, log: RequestLog
) -> dict[str, Any]:
    asked = parsed(EmbeddingsIn, body, "model and input")
    embedder = embedder_of(config, asked.model, "model")
    claims = Claims(user=asked.user, bound_user=caller.user_id)
    embedded = await embed_for_user(
        read_inputs(asked), embedder, claims, caller.key, config, engine, log, purpose="batch"
    )
    return embeddings_body(asked.model, embedded.vectors, embedded.usage, asked.encoding_format)


LINES = BatchLines("/v1/embeddings", answer_line, openai_error, embedders=True)
