"""The session's wire-format fakes, and reading what a fake received whatever its format."""

import json
from dataclasses import dataclass
from typing import Any

from tests.fakes.anthropic_upstream import AnthropicUpstream
from tests.fakes.base import FakeUpstream, Recorded
from tests.fakes.cohere_upstream import CohereUpstream
from tests.fakes.gemini_upstream import GeminiUpstream
from tests.fakes.openai_upstream import DeepSeekUpstream, OpenAIUpstream

# Provider kinds served by the session's fakes, and the fake class speaking each.
FAKE_CLASSES: dict[str, type[FakeUpstream]] = {
    "openai": OpenAIUpstream,
    "groq": OpenAIUpstream,
    "deepseek": DeepSeekUpstream,
    "anthropic": AnthropicUpstream,
    "gemini": GeminiUpstream,
    "cohere": CohereUpstream,
}
# deepseek answers within a second or the gateway gives up: the upstream-timeout tests use it.
PROVIDER_TIMEOUTS = {"deepseek": 1.0}


def api_key_of(kind: str) -> str:
    return f"sk-{kind}-secret-key-0123456789"


def fake_base_url(fake: FakeUpstream) -> str:
    return getattr(fake, "base_url", fake.url)


@dataclass(frozen=True)
class Received:
    """What one upstream call carried, read the same way whatever the wire format."""

    model: str
    api_key: str
    system: str
    turns: list[tuple[str, str]]  # (user | assistant, text) after the system part


def received(kind: str, recorded: Recorded) -> Received:
    body: dict[str, Any] = recorded.body
    headers = recorded.headers
    if kind == "anthropic":
        turns = [
            (message["role"], _blocks_text(message["content"])) for message in body["messages"]
        ]
        system = _blocks_text(body.get("system", ""))
        return Received(body["model"], headers["x-api-key"], system, turns)
    if kind == "gemini":
        model = recorded.path.rsplit("/", 1)[-1].split(":", 1)[0]
        system = _parts_text((body.get("systemInstruction") or {}).get("parts", []))
        turns = [
            ("assistant" if content["role"] == "model" else "user", _parts_text(content["parts"]))
            for content in body["contents"]
        ]
        return Received(model, headers["x-goog-api-key"], system, turns)
    messages = body["messages"]
    system = "\n\n".join(m["content"] for m in messages if m["role"] == "system")
    turns = [(m["role"], m["content"]) for m in messages if m["role"] != "system"]
    api_key = headers["authorization"].removeprefix("Bearer ")
    return Received(body["model"], api_key, system, turns)


def _blocks_text(content: str | list[dict[str, Any]]) -> str:
    if isinstance(content, str):
        return content
    return "".join(block["text"] for block in content if block["type"] == "text")


def _parts_text(parts: list[dict[str, Any]]) -> str:
    return "".join(part.get("text", "") for part in parts)


EMBEDDING_KINDS = ("openai", "gemini", "cohere")  # one per wire format that embeds


def shared_config(upstreams: dict[str, FakeUpstream]) -> str:
    """One agent per provider kind. Calls are not tried again (``retries.attempts: 0``), so
    a failure a test scripts is the one the client sees; test_resilience tries again."""
    lines = ["providers:"]
    for kind, fake in upstreams.items():
        timeout = PROVIDER_TIMEOUTS.get(kind, 10.0)
        lines.append(
            f"  {kind}: {{api_key: {api_key_of(kind)}, base_url: '{fake_base_url(fake)}', "
            f"timeout: {timeout}, retries: {{attempts: 0}}}}"
        )
    lines.append("agents:")
    for kind in upstreams:
        lines += [
            f"  - name: {kind}-agent",
            f"    provider: {kind}",
            f"    model: {kind}-model-1",
            f"    preamble: You are the {kind} agent of ACME.",
        ]
    lines += [
        "  - {name: stateless-agent, provider: openai, model: stateless-model, history: false}",
        "embedders:",
        *(
            f"  - {{name: {kind}-embedder, provider: {kind}, model: {kind}-embedding-1}}"
            for kind in EMBEDDING_KINDS
        ),
        "experiments:",
        "  - name: openai-experiment",
        "    strategy: split",
        "    variants: [{agent: openai-agent}]",
    ]
    return "\n".join(lines) + "\n"


def sent_tool_calls_and_results(
    kind: str, body: dict[str, Any]
) -> tuple[list[tuple[str, str, Any, str | None]], list[tuple[str, str]]]:
    """(id, name, arguments, signature) of the calls and (id, text) of the results sent."""
    calls: list[tuple[str, str, Any, str | None]]
    if kind == "anthropic":
        blocks = [block for message in body["messages"] for block in message["content"]]
        calls = [
            (block["id"], block["name"], block["input"], None)
            for block in blocks
            if block["type"] == "tool_use"
        ]
        results = [
            (block["tool_use_id"], block["content"])
            for block in blocks
            if block["type"] == "tool_result"
        ]
        return calls, results
    if kind == "gemini":
        parts = [part for content in body["contents"] for part in content["parts"]]
        calls = [
            (
                part["functionCall"]["id"],
                part["functionCall"]["name"],
                part["functionCall"]["args"],
                part.get("thoughtSignature"),
            )
            for part in parts
            if "functionCall" in part
        ]
        results = [
            (part["functionResponse"]["id"], _gemini_result(part["functionResponse"]["response"]))
            for part in parts
            if "functionResponse" in part
        ]
        return calls, results
    messages = body["messages"]
    calls = [
        (call["id"], call["function"]["name"], json.loads(call["function"]["arguments"]), None)
        for message in messages
        for call in message.get("tool_calls") or []
    ]
    results = [
        (message["tool_call_id"], message["content"])
        for message in messages
        if message["role"] == "tool"
    ]
    return calls, results


def _gemini_result(response: dict[str, Any]) -> str:
    """The text a Gemini function response carries (objects are sent as they are)."""
    return response["result"] if set(response) == {"result"} else json.dumps(response)
