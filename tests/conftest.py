"""Shared fixtures: wire-format fakes and one gateway process for the whole session.

Tests that can share the session gateway use a fresh ``user_id`` so history and
budgets never leak between them; tests that need their own config start their own
``GatewayServer``.
"""

import uuid
from collections.abc import Iterator
from pathlib import Path

import openai
import pytest

from tests.fakes.anthropic_upstream import AnthropicUpstream
from tests.fakes.base import FakeUpstream
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
