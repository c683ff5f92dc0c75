"""Two gateway processes serving one config file and one database lose no admin write."""

from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from filelock import FileLock

from agents.yamldoc import parse
from tests.server import GatewayServer

CONFIG = """\
# Shared by two processes.
providers:
  openai: {api_key: sk-shared-secret-0123456789}
agents:
  - name: base
    provider: openai
    model: m
memory: {kind: sqlite}  # unknown section
"""
WRITERS = 12


@pytest.fixture(scope="module")
def servers(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[GatewayServer, ...]]:
    shared = tmp_path_factory.mktemp("shared")
    config_path = shared / "gateway.yaml"
    database_url = f"sqlite:///{shared / 'gateway.sqlite3'}"
    first = GatewayServer(tmp_path_factory.mktemp("one"), CONFIG, database_url, config_path)
    second = GatewayServer(tmp_path_factory.mktemp("two"), None, database_url, config_path)
    started = (first.start(), second.start())
    yield started
    for server in started:
        server.stop()


def revision_ids(server: GatewayServer) -> list[int]:
    page = httpx.get(f"{server.url}/admin/revisions", headers={"Accept": "application/json"})
    return [revision["id"] for revision in page.json()["data"]]


def test_concurrent_creates_through_two_processes_all_land(
    servers: tuple[GatewayServer, GatewayServer],
) -> None:
    config_path: Path = servers[0].config_path
    revisions_before = len(revision_ids(servers[0]))

    def create(index: int) -> int:
        server = servers[index % 2]
        body = {"name": f"agent-{index}", "provider": "openai", "model": "m"}
        return httpx.post(f"{server.url}/admin/agents", json=body, timeout=30).status_code

    with ThreadPoolExecutor(max_workers=WRITERS) as pool:
        statuses = list(pool.map(create, range(WRITERS)))

    assert statuses == [201] * WRITERS
    names = [agent["name"] for agent in parse(config_path.read_text())["agents"]]
    assert sorted(names) == sorted(["base", *(f"agent-{index}" for index in range(WRITERS))])
    text = config_path.read_text()
    assert text.startswith("# Shared by two processes.\n")
    assert "memory: {kind: sqlite}  # unknown section\n" in text
    assert len(revision_ids(servers[1])) == revisions_before + WRITERS
    for server in servers:
        listed = httpx.get(f"{server.url}/admin/agents", headers={"Accept": "application/json"})
        assert len(listed.json()) == WRITERS + 1


def test_two_editors_with_the_same_etag_cannot_both_replace_the_file(
    servers: tuple[GatewayServer, GatewayServer],
) -> None:
    yaml = {"Accept": "application/yaml"}
    read = httpx.get(f"{servers[0].url}/admin/config", headers=yaml)
    etag = read.headers["ETag"]
    assert httpx.get(f"{servers[1].url}/admin/config", headers=yaml).headers["ETag"] == etag

    def replace(index: int) -> int:
        text = read.text.replace("model: m\n", f"model: editor-{index}\n", 1)
        headers = {"Content-Type": "application/yaml", "If-Match": etag}
        url = f"{servers[index].url}/admin/config"
        return httpx.put(url, content=text, headers=headers, timeout=30).status_code

    with ThreadPoolExecutor(max_workers=2) as pool:
        statuses = sorted(pool.map(replace, range(2)))

    assert statuses == [204, 412]
    text = servers[0].config_path.read_text()
    assert ("model: editor-0\n" in text) != ("model: editor-1\n" in text)
    assert "api_key: sk-shared-secret-0123456789" in text  # the masked key was kept


def test_write_waiting_over_5_s_for_the_lock_is_503_with_retry_after(
    servers: tuple[GatewayServer, GatewayServer],
) -> None:
    config_path = servers[0].config_path
    before = config_path.read_bytes()
    first, second = (server.url for server in servers)

    with FileLock(f"{config_path}.lock"), ThreadPoolExecutor(max_workers=2) as pool:
        body = {"name": "waiting", "provider": "openai", "model": "m"}
        created = pool.submit(httpx.post, f"{first}/admin/agents", json=body, timeout=30)
        replaced = pool.submit(
            httpx.put, f"{second}/admin/config", json={"history": {"max_messages": 3}}, timeout=30
        )
        responses = [created.result(), replaced.result()]

    for response in responses:
        assert response.status_code == 503, response.text
        assert response.headers["Retry-After"] == "1"
        assert response.json()["error"]["code"] == "config_busy"
    assert config_path.read_bytes() == before
