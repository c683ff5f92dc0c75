"""OpenAI's chat completions (``POST /v1/chat/completions``) and the model list
(``GET /v1/models``, ``GET /v1/models/{id}``): each view parses, runs the turn, writes.

Credentials (``auth.proxy``) are checked before any of this, in front of Django
(``inference.api.middleware``): ninja parses the body before a view runs.
"""

from django.http import HttpResponse, HttpResponseBase

from inference.dialects.chat.body import ChatCompletionIn
from inference.dialects.chat.reader import from_chat_completion
from inference.dialects.chat.reply import ChatCompletionReply
from inference.neutral.errors import ApiError
from inference.serving.context import InferenceRequest, limits_of
from inference.serving.routes import dialect_api
from inference.serving.serve import json_response, serve
from inference.turn.preparation import live_config

OWNED_BY = "agent-gateway"

api = dialect_api("chat", lambda path: "model and messages")


@api.get("/v1/models")
async def list_models(request: InferenceRequest) -> HttpResponse:
    holder = request.runtime.holder
    config = live_config(holder.config, holder.problems)
    key = request.api_key
    served = [*(agent.name for agent in config.agents), *(e.name for e in config.embedders)]
    names = [name for name in served if key is None or key.allows(name)]
    return json_response({"object": "list", "data": [_model(name) for name in names]})


@api.get("/v1/models/{path:model_id}")
async def retrieve_model(request: InferenceRequest, model_id: str) -> HttpResponse:
    """An agent, an experiment or an alias (valid models, only not listed); a model the
    request's key may not call is as unknown."""
    holder = request.runtime.holder
    config = live_config(holder.config, holder.problems)
    key = request.api_key
    target = config.target(model_id)
    known = any(find(target) for find in (config.agent, config.experiment, config.embedder))
    if not known or (key is not None and not key.allows(target)):
        raise ApiError(
            404, f"The model '{model_id}' does not exist", param="model", code="model_not_found"
        )
    return json_response(_model(model_id))


def _model(name: str) -> dict[str, object]:
    return {"id": name, "object": "model", "created": 0, "owned_by": OWNED_BY}


@api.post("/v1/chat/completions")
async def chat_completions(
    request: InferenceRequest, payload: ChatCompletionIn
) -> HttpResponseBase:
    client = from_chat_completion(
        payload,
        request.headers.get("X-User-Id"),
        bound_user=request.bound_user,
        max_tools=limits_of(request).max_tools,
    )
    return await serve(request, client, ChatCompletionReply(), id_prefix="chatcmpl-")
