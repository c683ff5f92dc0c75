"""Shared fixtures: wire-format fakes and one gateway process for the whole session.

Tests that can share the session gateway use a fresh ``user_id`` so history and
budgets never leak between them; tests that need their own config start their own
``GatewayServer``.
"""

import os
import uuid
from collections.abc import Iterator

import openai
import psycopg
import pytest

from tests.fakes.base import FakeUpstream
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.server import GatewayServer
from tests.services import PROBES, missing
from tests.upstreams import FAKE_CLASSES, shared_config

pytest_plugins = ["tests.scheduling"]

# Fixtures that stand for a service: a test using one is in that service's group.
SERVICE_FIXTURES = {"postgres_url": "postgres", "page": "browser"}


@pytest.hookimpl(tryfirst=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        for fixture, marker in SERVICE_FIXTURES.items():
            if fixture in getattr(item, "fixturenames", ()):
                item.add_marker(marker)


def pytest_collection_finish(session: pytest.Session) -> None:
    """Skip each test whose service is missing, with the reason (or refuse to run at all
    when ``GATEWAY_TESTS_REQUIRE_SERVICES=1``)."""
    groups = {
        marker for item in session.items for marker in PROBES if item.get_closest_marker(marker)
    }
    reasons = {marker: missing(marker) for marker in sorted(groups)}
    absent = {marker: reason for marker, reason in reasons.items() if reason is not None}
    if absent and os.environ.get("GATEWAY_TESTS_REQUIRE_SERVICES") == "1":
        listed = "; ".join(f"[{marker}] {reason}" for marker, reason in absent.items())
        raise pytest.UsageError(f"services the tests require are missing: {listed}")
    for item in session.items:
        for marker, reason in absent.items():
            if item.get_closest_marker(marker):
                item.add_marker(pytest.mark.skip(reason=f"[{marker}] {reason}"))
                break


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
def postgres_url() -> Iterator[str]:
    """A fresh database on the local PostgreSQL server, dropped after the test."""
    name = f"gateway_test_{uuid.uuid4().hex[:10]}"
    admin = "postgresql://postgres@127.0.0.1:5432/postgres"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'CREATE DATABASE "{name}"')
    yield f"postgres://postgres@127.0.0.1:5432/{name}"
    with psycopg.connect(admin, autocommit=True) as connection:
        connection.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
