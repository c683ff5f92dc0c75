"""Google's Gemini API in front of the agents (docs/gemini.md): ``generateContent`` and
``streamGenerateContent`` over the same turn as every dialect, ``countTokens``,
``embedContent`` and ``batchEmbedContents`` for the embedders, and the model list; under
``/v1beta``, and the methods also under ``/v1``, as Google serves them."""

from collections.abc import Callable
from typing import Any, Literal

from django.http import HttpResponse, HttpResponseBase

from agents.schema import AgentConfig, Config, EmbedderConfig
from inference.dialects.gemini.body import (
    BatchEmbedIn,
    CountTokensIn,
    EmbedContentIn,
    GenerateContentIn,
)
from inference.dialects.gemini.reader import content_text, from_count_tokens, from_generate_content
from inference.dialects.gemini.reply import GeminiReply
from inference.neutral.errors import ApiError, invalid_request
from inference.neutral.request import Claims
from inference.serving.context import InferenceRequest, limits_of
from inference.serving.routes import dialect_api
from inference.serving.serve import json_response, serve
from inference.turn.counting import prompt_tokens
from inference.turn.embeddings import EmbeddingAsk, embed_for_user
from inference.turn.preparation import checked_tools, live_config

METHODS = (
    "generateContent",
    "streamGenerateContent",
    "countTokens",
    "embedContent",
    "batchEmbedContents",
)
_AGENT_METHODS = ["generateContent", "streamGenerateContent", "countTokens"]
_EMBEDDER_METHODS = ["embedContent", "batchEmbedContents"]


def _required(path: str) -> str:
    if path.endswith(":batchEmbedContents"):
        return "requests"
    if path.endswith(":embedContent"):
        return "content"
    return "contents"


api = dialect_api("gemini", _required)


def _method(name: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """The POST route of ``name`` under ``/v1beta/models/{model}`` and ``/v1/models/{model}``."""

    def register(view: Callable[..., Any]) -> Callable[..., Any]:
        for version in ("v1beta", "v1"):
            api.post(f"/{version}/models/{{model}}:{name}")(view)
        return view

    return register


@_method("generateContent")
async def generate_content(
    request: InferenceRequest, model: str, payload: GenerateContentIn
) -> HttpResponseBase:
    return await _generate(request, model, payload, stream=False)


@_method("streamGenerateContent")
async def stream_generate_content(
    request: InferenceRequest, model: str, payload: GenerateContentIn
) -> HttpResponseBase:
    return await _generate(request, model, payload, stream=True)


async def _generate(
    request: InferenceRequest, model: str, payload: GenerateContentIn, stream: bool
) -> HttpResponseBase:
    _answering_agent(request, model, generating=True)
    client = from_generate_content(
        payload, _name(model), _claims(request), stream, limits_of(request).max_tools
    )
    reply = GeminiReply(sse=request.GET.get("alt") == "sse")
    return await serve(request, client, reply, id_prefix="gen-")


@_method("countTokens")
async def count_tokens(
    request: InferenceRequest, model: str, payload: CountTokensIn
) -> HttpResponse:
    """What the agent's upstream would be sent (``inference.turn.counting``): no user, no
    history, nothing billed."""
    config, agent = _answering_agent(request, model)
    client = from_count_tokens(payload, _name(model), config.limits.max_tools)
    await checked_tools(client.tools)
    engine = request.runtime.engine
    counted = await prompt_tokens(
        agent, client.system, client.messages, client.tools.specs, config, engine
    )
    return json_response({"totalTokens": counted})


@_method("embedContent")
async def embed_content(
    request: InferenceRequest, model: str, payload: EmbedContentIn
) -> HttpResponse:
    config, embedder = _embedder(request, model)
    ask = EmbeddingAsk(
        _name(model),
        texts=(content_text(payload.content, "content"),),
        dimensions=payload.output_dimensionality,
        purpose=_purpose(payload.task_type),
    )
    (values,) = await _embed(request, ask, embedder, config)
    return json_response({"embedding": {"values": values}})


@_method("batchEmbedContents")
async def batch_embed_contents(
    request: InferenceRequest, model: str, payload: BatchEmbedIn
) -> HttpResponse:
    """Every request of the batch is for the model of the path; the first one's
    ``taskType`` and ``outputDimensionality`` hold for all."""
    config, embedder = _embedder(request, model)
    for index, one in enumerate(payload.requests):
        if one.model is not None and _name(one.model) != _name(model):
            raise invalid_request(
                f"requests[{index}].model must be the model of the path, models/{_name(model)}",
                param=f"requests[{index}].model",
                code="invalid_input",
            )
    first = payload.requests[0]
    ask = EmbeddingAsk(
        _name(model),
        texts=tuple(
            content_text(one.content, f"requests[{index}].content")
            for index, one in enumerate(payload.requests)
        ),
        dimensions=first.output_dimensionality,
        purpose=_purpose(first.task_type),
    )
    vectors = await _embed(request, ask, embedder, config)
    return json_response({"embeddings": [{"values": values} for values in vectors]})


@api.get("/v1beta/models")
async def list_models(request: InferenceRequest) -> HttpResponse:
    """The agents and embedders the request's key may call (experiments and aliases are
    valid models, only not listed)."""
    config = _config(request)
    key = request.api_key
    listed = [
        _model(agent.name, _AGENT_METHODS, agent.purpose or "") for agent in config.agents
    ] + [_model(embedder.name, _EMBEDDER_METHODS, "") for embedder in config.embedders]
    shown = [item for item in listed if key is None or key.allows(item["displayName"])]
    return json_response({"models": shown})


@api.get("/v1beta/models/{model}")
async def get_model(request: InferenceRequest, model: str) -> HttpResponse:
    config = _config(request)
    name = _name(model)
    target = config.target(name)
    key = request.api_key
    if key is not None and not key.allows(target):
        raise _not_found(name)
    if config.embedder(target) is not None:
        return json_response(_model(name, _EMBEDDER_METHODS, ""))
    agent = config.agent(target)
    if agent is None and config.experiment(target) is None:
        raise _not_found(name)
    return json_response(_model(name, _AGENT_METHODS, (agent.purpose or "") if agent else ""))


def _model(name: str, methods: list[str], description: str) -> dict[str, Any]:
    return {
        "name": f"models/{name}",
        "displayName": name,
        "description": description,
        "supportedGenerationMethods": methods,
    }


def _name(model: str) -> str:
    """A model as the client named it, without Google's ``models/`` prefix."""
    return model.removeprefix("models/")


def _claims(request: InferenceRequest) -> Claims:
    """Gemini's bodies name no user: a key, a bound principal, ``X-User-Id`` or the
    config's ``default_user_id`` does."""
    return Claims(header_user=request.headers.get("X-User-Id"), bound_user=request.bound_user)


def _config(request: InferenceRequest) -> Config:
    holder = request.runtime.holder
    return live_config(holder.config, holder.problems)


def _answering_agent(
    request: InferenceRequest, model: str, *, generating: bool = False
) -> tuple[Config, AgentConfig]:
    """The live config and the agent ``model`` names (an experiment's first variant), or
    404 as Google answers an unknown model. A model the key may not call is 403
    ``PERMISSION_DENIED`` when ``generating`` (as on chat), else unknown."""
    config = _config(request)
    target = config.target(_name(model))
    if generating and request.api_key is not None:
        request.api_key.check_allows(target)
    experiment = config.experiment(target)
    agent = config.agent(experiment.variants[0].agent if experiment is not None else target)
    key = request.api_key
    if agent is None or (key is not None and not key.allows(target)):
        raise _not_found(_name(model))
    return config, agent


def _embedder(request: InferenceRequest, model: str) -> tuple[Config, EmbedderConfig]:
    config = _config(request)
    embedder = config.embedder(config.target(_name(model)))
    if embedder is None:
        raise _not_found(_name(model), "an embedder")
    return config, embedder


async def _embed(
    request: InferenceRequest, ask: EmbeddingAsk, embedder: EmbedderConfig, config: Config
) -> list[list[float]]:
    """The vectors' values, in order."""
    engine = request.runtime.engine
    embedded = await embed_for_user(
        ask, embedder, _claims(request), request.api_key, config, engine, request.log, request.span
    )
    return [vector.tolist() for vector in embedded.vectors]


def _purpose(task_type: str | None) -> Literal["document", "query"]:
    return "query" if task_type in ("RETRIEVAL_QUERY", "QUESTION_ANSWERING") else "document"


def _not_found(model: str, what: str = "an agent or experiment") -> ApiError:
    return ApiError(
        404,
        f"models/{model} is not found: it is not {what} of this gateway",
        code="model_not_found",
    )
