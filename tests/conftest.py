"""Shared fixtures: wire-format fakes and one gateway process for the whole session.

Tests that can share the session gateway use a fresh ``user_id`` so history and
budgets never leak between them; tests that need their own config start their own
``GatewayServer``.
"""

import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import openai
import pytest

from tests.fakes.anthropic_upstream import AnthropicUpstream
from tests.fakes.base import FakeUpstream, Recorded
from tests.fakes.cohere_upstream import CohereUpstream
from tests.fakes.gemini_upstream import GeminiUpstream
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.server import GatewayServer

# Provider kinds served by the session's fakes, and the fake class speaking each.
FAKE_CLASSES: dict[str, type[FakeUpstream]] = {
    "openai": OpenAIUpstream,
    "groq": OpenAIUpstream,
    "deepseek": OpenAIUpstream,
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
        return Received(body["model"], headers["x-api-key"], body.get("system", ""), turns)
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


def shared_config(upstreams: dict[str, FakeUpstream]) -> str:
    lines = ["providers:"]
    for kind, fake in upstreams.items():
        timeout = PROVIDER_TIMEOUTS.get(kind, 10.0)
        lines.append(
            f"  {kind}: {{api_key: {api_key_of(kind)}, base_url: '{fake_base_url(fake)}', timeout: {timeout}}}"
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
        "experiments:",
        "  - name: openai-experiment",
        "    strategy: split",
        "    variants: [{agent: openai-agent}]",
    ]
    return "\n".join(lines) + "\n"


@pytest.fixture(scope="session")
def upstreams() -> Iterator[dict[str, FakeUpstream]]:
    fakes = {kind: fake_class().start() for kind, fake_class in FAKE_CLASSES.items()}
    yield fakes
    for fake in fakes.values():
        fake.stop()


@pytest.fixture
def fakes(upstreams: dict[str, FakeUpstream]) -> dict[str, FakeUpstream]:
    """The session's fakes, emptied of scripts and recordings for this test."""
    for fake in upstreams.values():
        fake.reset()
    return upstreams


@pytest.fixture
def openai_fake(fakes: dict[str, FakeUpstream]) -> OpenAIUpstream:
    fake = fakes["openai"]
    assert isinstance(fake, OpenAIUpstream)
    return fake


@pytest.fixture(scope="session")
def gateway(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    server = GatewayServer(tmp_path_factory.mktemp("gateway"), shared_config(upstreams)).start()
    yield server
    server.stop()


@pytest.fixture
def client(gateway: GatewayServer) -> openai.OpenAI:
    return openai.OpenAI(base_url=f"{gateway.url}/v1", api_key="any-key", max_retries=0)


@pytest.fixture
def user_id() -> str:
    return f"user-{uuid.uuid4().hex[:12]}"


@pytest.fixture
def compat_dir() -> Path:
    return Path(__file__).resolve().parents[2] / "shared" / "compat"
