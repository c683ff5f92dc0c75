"""The OpenAI-compatible ``/v1`` surface: each view parses, runs the turn, serializes.

Credentials (``auth.proxy``) are checked before any of this, by
``inference.api.middleware.ProxyAuthMiddleware``: ninja parses the body before a view runs.
"""

from typing import Any

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from ninja import NinjaAPI
from ninja.errors import HttpError, ValidationError
from ninja.parser import Parser

from inference.api.body_errors import body_error
from inference.api.context import InferenceRequest
from inference.api.embeddings import router as embeddings_router
from inference.api.messages import router as messages_router
from inference.api.responses import router as responses_router
from inference.api.serve import json_response, serve
from inference.errors import ApiError, invalid_request
from inference.turn.preparation import live_config
from inference.wire.chat_body import ChatCompletionIn
from inference.wire.chat_out import ChatCompletionReply
from inference.wire.client_request import from_chat_completion

OWNED_BY = "agent-gateway"


class V1Parser(Parser):
    """JSON bodies; one over 1 MiB arrives parsed off the event loop (``parsed_body``)."""

    def parse_body(self, request: HttpRequest) -> Any:
        parsed = getattr(request, "parsed_body", None)
        if parsed is None:
            return super().parse_body(request)
        if isinstance(parsed, ValueError):
            raise parsed
        return parsed


api = NinjaAPI(
    urls_namespace="v1", docs_url=None, openapi_url=None, title="Gateway /v1", parser=V1Parser()
)


@api.get("/models")
async def list_models(request: InferenceRequest) -> HttpResponse:
    holder = request.runtime.holder
    config = live_config(holder.config, holder.problems)
    key = request.api_key
    served = [*(agent.name for agent in config.agents), *(e.name for e in config.embedders)]
    names = [name for name in served if key is None or key.allows(name)]
    return json_response({"object": "list", "data": [_model(name) for name in names]})


@api.get("/models/{path:model_id}")
async def retrieve_model(request: InferenceRequest, model_id: str) -> HttpResponse:
    """An agent or an experiment (experiments are valid models, only not listed)."""
    holder = request.runtime.holder
    config = live_config(holder.config, holder.problems)
    if not any(find(model_id) for find in (config.agent, config.experiment, config.embedder)):
        raise ApiError(
            404, f"The model '{model_id}' does not exist", param="model", code="model_not_found"
        )
    return json_response(_model(model_id))


def _model(name: str) -> dict[str, object]:
    return {"id": name, "object": "model", "created": 0, "owned_by": OWNED_BY}


@api.post("/chat/completions")
async def chat_completions(
    request: InferenceRequest, payload: ChatCompletionIn
) -> HttpResponseBase:
    client = from_chat_completion(
        payload, request.headers.get("X-User-Id"), bound_user=request.bound_user
    )
    return await serve(request, client, ChatCompletionReply(), id_prefix="chatcmpl-")


api.add_router("/responses", responses_router)
api.add_router("/messages", messages_router)
api.add_router("/embeddings", embeddings_router)


@api.exception_handler(ApiError)
def _api_error(request: InferenceRequest, error: ApiError) -> HttpResponse:
    request.log.error = error.code or error.error_type
    return error.response(request.path)


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, error: ValidationError) -> HttpResponse:
    return body_error(error.errors, _REQUIRED.get(request.path, "model and messages")).response(
        request.path
    )


_REQUIRED = {
    "/v1/responses": "model and input",
    "/v1/messages": "model, messages and max_tokens",
    "/v1/messages/count_tokens": "model and messages",
}


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, error: HttpError) -> HttpResponse:
    if error.status_code == 400:
        failure = invalid_request("The request body is not valid JSON", code="invalid_json")
        return failure.response(request.path)
    return ApiError(error.status_code, str(error)).response(request.path)
