"""Span attributes as the OpenTelemetry semantic conventions name them (HTTP, GenAI), and
ours under ``gateway.*`` (docs/telemetry.md lists them all): the one place their names
are spelled."""

import json
from functools import lru_cache
from typing import Any
from urllib.parse import urlsplit

from inference.neutral.types import (
    ChatRequest,
    ChatResponse,
    EmbeddingRequest,
    Message,
    ToolCall,
    Usage,
)
from inference.telemetry.spans import Attributes


def server_attributes(method: str, path: str) -> Attributes:
    """A request's server span, as it starts."""
    return {"http.request.method": method, "url.path": path}


def status_attributes(status: int) -> Attributes:
    """A request's server span, once the client has its status."""
    return {"http.response.status_code": status}


def agent_attributes(agent: str, requested: str, user_id: str) -> Attributes:
    """An ``invoke_agent`` span's attributes: the agent that answers ``requested`` (the
    name the caller asked for: the agent itself, an experiment, a subagent's tool name)."""
    return {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": agent,
        "gen_ai.request.model": requested,
        "gateway.user.id": user_id,
    }


def experiment_attributes(experiment: str, variant: str) -> Attributes:
    """Which experiment and variant an ``invoke_agent`` span answers for."""
    return {"gateway.experiment": experiment, "gateway.variant": variant}


def key_attributes(key_id: int) -> Attributes:
    """The minted API key a turn's ``invoke_agent`` span is paid by."""
    return {"gateway.api_key.id": key_id}


def judged_attributes(agent: str) -> Attributes:
    """A judge's ``invoke_agent`` span: the agent whose reply it judges."""
    return {"gateway.judged.agent": agent}


def tool_result_attributes(text: str) -> Attributes:
    """An ``execute_tool`` span's result (only when content is captured)."""
    return {"gen_ai.tool.call.result": text}


def tool_attributes(name: str, kind: str, call: ToolCall, capture: bool) -> Attributes:
    """An ``execute_tool`` span's attributes. Every kind of tool the gateway runs is an
    "extension" tool in the conventions' terms (run by the agent's side, not the
    client's); ``gateway.tool.kind`` tells an MCP tool from a subagent and from a tool of
    the agent's skills (``skill``)."""
    attributes: Attributes = {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": name,
        "gen_ai.tool.call.id": call.id,
        "gen_ai.tool.type": "extension",
        "gateway.tool.kind": kind,
    }
    if capture:
        attributes["gen_ai.tool.call.arguments"] = call.arguments
    return attributes


@lru_cache(maxsize=64)
def _server(base_url: str) -> tuple[str, int]:
    parts = urlsplit(base_url)
    return parts.hostname or "", parts.port or (443 if parts.scheme == "https" else 80)


def operation_of(request: ChatRequest | EmbeddingRequest) -> str:
    """The GenAI operation a request to a model is (``gen_ai.operation.name``)."""
    return "chat" if isinstance(request, ChatRequest) else "embeddings"


def call_attributes(
    provider_name: str,
    base_url: str,
    request: ChatRequest | EmbeddingRequest,
    attempt: int,
    capture: bool,
) -> Attributes:
    """A ``chat`` or ``embeddings`` span's attributes as the attempt starts
    (``provider_name``: the provider kind as the conventions name it)."""
    address, port = _server(base_url)
    attributes: Attributes = {
        "gen_ai.operation.name": operation_of(request),
        "gen_ai.provider.name": provider_name,
        "gen_ai.request.model": request.model,
        "server.address": address,
        "server.port": port,
        "gateway.attempt": attempt,
    }
    if isinstance(request, EmbeddingRequest):
        if request.dimensions is not None:
            attributes["gen_ai.embeddings.dimension.count"] = request.dimensions
        return attributes
    sampling = request.sampling
    for name, value in (
        ("gen_ai.request.temperature", sampling.temperature),
        ("gen_ai.request.top_p", sampling.top_p),
        ("gen_ai.request.max_tokens", sampling.max_tokens),
        ("gen_ai.request.seed", sampling.seed),
    ):
        if value is not None:
            attributes[name] = value
    if capture:
        if request.system:
            attributes["gen_ai.system_instructions"] = json.dumps(
                [{"type": "text", "content": request.system}]
            )
        attributes["gen_ai.input.messages"] = json.dumps(
            [_message(message) for message in request.messages]
        )
    return attributes


def cache_attributes(result: str) -> Attributes:
    """A ``chat`` span's response-cache result: ``hit``, ``miss`` or ``bypass``."""
    return {"gateway.cache.result": result}


def cache_hit_attributes(model: str, response: ChatResponse, age: int) -> Attributes:
    """The ``chat`` span of a call answered from the cache (no upstream was called):
    the reply as first answered, and how old it is."""
    attributes = response_attributes(response, capture=False)
    attributes.update(cache_attributes("hit"))
    attributes["gen_ai.operation.name"] = "chat"
    attributes["gen_ai.request.model"] = model
    attributes["gateway.cache.age_seconds"] = age
    return attributes


def usage_attributes(usage: Usage) -> Attributes:
    attributes: Attributes = {
        "gen_ai.usage.input_tokens": usage.prompt_tokens,
        "gen_ai.usage.output_tokens": usage.completion_tokens,
    }
    if usage.cached_tokens is not None:
        attributes["gen_ai.usage.cache_read.input_tokens"] = usage.cached_tokens
    if usage.cache_write_tokens is not None:
        attributes["gen_ai.usage.cache_creation.input_tokens"] = usage.cache_write_tokens
    if usage.reasoning_tokens is not None:
        attributes["gen_ai.usage.reasoning.output_tokens"] = usage.reasoning_tokens
    if usage.cost_usd is not None:
        attributes["gateway.cost_usd"] = usage.cost_usd
    return attributes


def response_attributes(response: ChatResponse, capture: bool) -> Attributes:
    """A finished ``chat`` span's attributes: what the model answered."""
    attributes = usage_attributes(response.usage)
    attributes["gen_ai.response.finish_reasons"] = (response.finish_reason,)
    if response.response_id:
        attributes["gen_ai.response.id"] = response.response_id
    if response.response_model:
        attributes["gen_ai.response.model"] = response.response_model
    if capture:
        output = _parts(response.text, response.tool_calls)
        attributes["gen_ai.output.messages"] = json.dumps(
            [{"role": "assistant", "parts": output, "finish_reason": response.finish_reason}]
        )
    return attributes


def _message(message: Message) -> dict[str, Any]:
    if message.role == "tool":
        part = {
            "type": "tool_call_response",
            "id": message.tool_call_id,
            "response": message.content,
        }
        return {"role": "tool", "parts": [part]}
    return {"role": message.role, "parts": _parts(message.content, message.tool_calls)}


def _parts(text: str, calls: tuple[ToolCall, ...]) -> list[dict[str, Any]]:
    parts: list[dict[str, Any]] = [{"type": "text", "content": text}] if text else []
    parts += [
        {"type": "tool_call", "id": call.id, "name": call.name, "arguments": call.arguments}
        for call in calls
    ]
    return parts
