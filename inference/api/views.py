"""The OpenAI-compatible ``/v1`` surface: each view parses, runs the turn, serializes.

Credentials (``auth.proxy``) are checked before any of this, by
``inference.api.middleware.ProxyAuthMiddleware``: ninja parses the body before a view runs.
"""

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, StreamingHttpResponse
from ninja import NinjaAPI
from ninja.errors import HttpError, ValidationError

from core import fastjson
from inference.api.body_errors import body_error
from inference.api.context import InferenceRequest
from inference.errors import ApiError, invalid_request
from inference.turn.preparation import live_config, prepare_turn
from inference.turn.runner import TurnRunner
from inference.wire import chat_out, responses_out
from inference.wire.chat_body import ChatCompletionIn, ResponsesIn
from inference.wire.client_request import from_chat_completion
from inference.wire.responses_in import from_responses

OWNED_BY = "agent-gateway"

api = NinjaAPI(urls_namespace="v1", docs_url=None, openapi_url=None, title="Gateway /v1")


@api.get("/models")
async def list_models(request: InferenceRequest) -> HttpResponse:
    holder = request.runtime.holder
    config = live_config(holder.config, holder.problems)
    return _json({"object": "list", "data": [_model(agent.name) for agent in config.agents]})


@api.get("/models/{path:model_id}")
async def retrieve_model(request: InferenceRequest, model_id: str) -> HttpResponse:
    """An agent or an experiment (experiments are valid models, only not listed)."""
    holder = request.runtime.holder
    config = live_config(holder.config, holder.problems)
    if config.agent(model_id) is None and config.experiment(model_id) is None:
        raise ApiError(
            404, f"The model '{model_id}' does not exist", param="model", code="model_not_found"
        )
    return _json(_model(model_id))


def _model(name: str) -> dict[str, object]:
    return {"id": name, "object": "model", "created": 0, "owned_by": OWNED_BY}


@api.post("/chat/completions")
async def chat_completions(request: InferenceRequest, payload: ChatCompletionIn) -> HttpResponse:
    holder, engine = request.runtime.holder, request.runtime.engine
    config = live_config(holder.config, holder.problems)
    client = from_chat_completion(
        payload, request.headers.get("X-User-Id"), bound_user=request.bound_user
    )
    turn = await prepare_turn(client, config, engine, request.log)
    runner = TurnRunner(config, engine, request.log)
    if client.stream:
        events = await runner.open_stream(turn)
        return _event_stream(chat_out.chunks(turn, events))
    answer = await runner.complete(turn)
    return _json(chat_out.completion(turn, answer))


@api.post("/responses")
async def responses(request: InferenceRequest, payload: ResponsesIn) -> HttpResponse:
    """The Responses API over the same turn (a stateless subset: DESIGN 3.2)."""
    holder, engine = request.runtime.holder, request.runtime.engine
    config = live_config(holder.config, holder.problems)
    client = from_responses(
        payload, request.headers.get("X-User-Id"), bound_user=request.bound_user
    )
    turn = await prepare_turn(client, config, engine, request.log, id_prefix="resp_")
    runner = TurnRunner(config, engine, request.log)
    settings = responses_out.echo(payload)
    if client.stream:
        events = await runner.open_stream(turn)
        return _event_stream(responses_out.events(turn, settings, events))
    answer = await runner.complete(turn)
    return _json(responses_out.response(turn, settings, answer))


def _json(body: dict) -> HttpResponse:
    return HttpResponse(fastjson.dumps(body), content_type="application/json")


def _event_stream(frames: object) -> StreamingHttpResponse:
    response = StreamingHttpResponse(frames, content_type="text/event-stream")
    response["Cache-Control"] = "no-cache"
    response["X-Accel-Buffering"] = "no"
    return response


@api.exception_handler(ApiError)
def _api_error(request: InferenceRequest, error: ApiError) -> HttpResponse:
    request.log.error = error.code or error.error_type
    return error.response()


@api.exception_handler(ValidationError)
def _validation_error(request: HttpRequest, error: ValidationError) -> HttpResponse:
    required = "model and input" if request.path.endswith("/responses") else "model and messages"
    return body_error(error.errors, required).response()


@api.exception_handler(RequestDataTooBig)
def _body_too_large(request: HttpRequest, error: RequestDataTooBig) -> HttpResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return ApiError(
        413, f"The request body is larger than {limit} bytes", code="request_too_large"
    ).response()


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, error: HttpError) -> HttpResponse:
    if error.status_code == 400:
        return invalid_request("The request body is not valid JSON", code="invalid_json").response()
    return ApiError(error.status_code, str(error)).response()
