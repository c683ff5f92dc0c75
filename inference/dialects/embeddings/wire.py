"""``POST /v1/embeddings`` on the wire: OpenAI's request body (texts or token arrays),
and its ``list`` of ``embedding`` objects (floats, or base64 of little-endian float32, as
the SDK decodes)."""

import base64
from typing import Any, Literal

from pydantic import Field

from core.float32 import Vector, packed
from inference.neutral.body import Lenient
from inference.neutral.errors import invalid_request
from inference.neutral.types import Usage
from inference.turn.embeddings import EmbeddingAsk

MAX_INPUTS = 2048  # texts in one request, as OpenAI allows


class EmbeddingsIn(Lenient):
    model: str
    input: str | list[Any]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1)
    user: str | None = None


def read_inputs(body: EmbeddingsIn) -> EmbeddingAsk:
    """``input`` as OpenAI takes it: a string, a list of strings, one token array (a list
    of integers), or a list of token arrays; every one non-empty."""
    given = body.input
    if isinstance(given, str):
        items: list[Any] = [given]
    elif given and all(_is_token(item) for item in given):
        items = [given]
    else:
        items = given
    if not items or len(items) > MAX_INPUTS:
        raise invalid_request(
            f"input must hold 1 to {MAX_INPUTS} inputs", param="input", code="invalid_input"
        )
    textual = isinstance(items[0], str)
    for index, item in enumerate(items):
        if not (_is_text(item) if textual else _is_token_array(item)):
            where = "input" if items is not given else f"input[{index}]"
            raise invalid_request(
                f"{where} must be a non-empty string or a non-empty array of tokens "
                "(integers), all inputs of one kind",
                param=where,
                code="invalid_input",
            )
    if textual:
        return EmbeddingAsk(body.model, texts=tuple(items), dimensions=body.dimensions)
    arrays = tuple(tuple(item) for item in items)
    return EmbeddingAsk(body.model, token_arrays=arrays, dimensions=body.dimensions)


def _is_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value)


def _is_token_array(value: Any) -> bool:
    return isinstance(value, list) and bool(value) and all(map(_is_token, value))


def _is_token(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 0


def embeddings_body(
    model: str, vectors: tuple[Vector, ...], usage: Usage, encoding: str
) -> dict[str, Any]:
    data = [
        {"object": "embedding", "index": index, "embedding": _encoded(vector, encoding)}
        for index, vector in enumerate(vectors)
    ]
    body: dict[str, Any] = {
        "object": "list",
        "data": data,
        "model": model,
        "usage": {"prompt_tokens": usage.prompt_tokens, "total_tokens": usage.prompt_tokens},
    }
    if usage.cost_usd is not None:
        body["usage"]["cost"] = usage.cost_usd
    return body


def _encoded(vector: Vector, encoding: str) -> list[float] | str:
    """float32 values stay as they are (as Python floats, exactly): an OpenAI embedder's
    JSON numbers read the same whichever form the gateway asked it for."""
    if encoding == "base64":
        return base64.b64encode(packed(vector)).decode()
    values: list[float] = vector.tolist()
    return values
