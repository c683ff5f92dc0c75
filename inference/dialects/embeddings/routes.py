"""``POST /v1/embeddings`` (docs/embeddings.md): OpenAI's embeddings API in front of the
config's embedders (``inference.turn.embeddings`` admits and bills the request)."""

from django.http import HttpResponse

from inference.dialects.embeddings.wire import EmbeddingsIn, embeddings_body, read_inputs
from inference.neutral.errors import invalid_request
from inference.neutral.request import Claims
from inference.providers.registry import PROVIDER_CLASSES
from inference.serving.context import InferenceRequest
from inference.serving.routes import dialect_api
from inference.serving.serve import json_response
from inference.turn.embeddings import embed_for_user, embedder_of
from inference.turn.preparation import live_config

api = dialect_api("embeddings", lambda path: "model and input")


@api.post("/v1/embeddings")
async def create_embeddings(request: InferenceRequest, payload: EmbeddingsIn) -> HttpResponse:
    holder, engine = request.runtime.holder, request.runtime.engine
    config = live_config(holder.config, holder.problems)
    ask = read_inputs(payload)
    embedder = embedder_of(config, payload.model, "model")
    kind = config.provider_kind(embedder.provider)
    if ask.token_arrays and not PROVIDER_CLASSES[kind].takes_token_arrays:
        raise invalid_request(
            f"input: token arrays are passed only to OpenAI-format embedders (they belong "
            f"to its tokenizer); '{embedder.name}' is of kind {kind}: send text",
            param="input",
            code="invalid_input",
        )
    claims = Claims(
        user=payload.user,
        header_user=request.headers.get("X-User-Id"),
        bound_user=request.bound_user,
    )
    embedded = await embed_for_user(
        ask, embedder, claims, request.api_key, config, engine, request.log, request.span
    )
    return json_response(
        embeddings_body(payload.model, embedded.vectors, embedded.usage, payload.encoding_format)
    )
