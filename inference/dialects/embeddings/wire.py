"""``POST /v1/embeddings`` on the wire: OpenAI's request body, and its ``list`` of
``embedding`` objects (floats, or base64 of little-endian float32, as the SDK decodes)."""

import base64
from typing import Any, Literal

from pydantic import Field

from core.float32 import packed
from inference.neutral.body import Lenient
from inference.neutral.errors import invalid_request
from inference.neutral.types import Usage

MAX_INPUTS = 2048  # texts in one request, as OpenAI allows


class EmbeddingsIn(Lenient):
    model: str
    input: str | list[Any]
    encoding_format: Literal["float", "base64"] = "float"
    dimensions: int | None = Field(default=None, ge=1)
    user: str | None = None


def input_texts(body: EmbeddingsIn) -> list[str]:
    """The texts to embed: a string or a list of non-empty strings (token arrays are not
    served: they belong to one provider's tokenizer)."""
    texts = [body.input] if isinstance(body.input, str) else body.input
    if not texts or len(texts) > MAX_INPUTS:
        raise invalid_request(
            f"input must hold 1 to {MAX_INPUTS} texts", param="input", code="invalid_input"
        )
    for index, text in enumerate(texts):
        if not isinstance(text, str) or not text:
            where = "input" if isinstance(body.input, str) else f"input[{index}]"
            raise invalid_request(
                f"{where} must be a non-empty string (token arrays are not supported)",
                param=where,
                code="invalid_input",
            )
    return texts


def embeddings_body(
    model: str, vectors: tuple[tuple[float, ...], ...], usage: Usage, encoding: str
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


def _encoded(vector: tuple[float, ...], encoding: str) -> list[float] | str:
    if encoding == "base64":
        return base64.b64encode(packed(vector)).decode()
    return list(vector)
