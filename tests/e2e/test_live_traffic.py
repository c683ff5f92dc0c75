"""The admin's live traffic page in headless Chromium: a request made after the page
opened appears on it, also with two workers publishing through Redis."""

import json
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Page, expect
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect

from tests.browser import chromium_page, shot
from tests.fakes.base import FakeUpstream
from tests.server import GatewayServer
from tests.upstreams import shared_config

REDIS_URL = "redis://127.0.0.1:6379/0"


@pytest.fixture
def page() -> Iterator[Page]:
    with chromium_page() as page:
        yield page


def open_live_page(page: Page, server: GatewayServer) -> None:
    page.goto(f"http://localhost:{server.port}/admin/live")
    expect(page.locator("#live-status")).to_contain_text("Connected")


def ask(server: GatewayServer, user: str) -> httpx.Response:
    """One request on a connection of its own (under --workers, either may serve it)."""
    body = {
        "model": "openai-agent",
        "messages": [{"role": "user", "content": "hello"}],
        "safety_identifier": user,
    }
    return httpx.post(f"{server.url}/v1/chat/completions", json=body, timeout=30)


def test_live_page_shows_a_request_made_after_it_opened(
    page: Page, gateway: GatewayServer, user_id: str
) -> None:
    open_live_page(page, gateway)
    response = ask(gateway, user_id)
    assert response.status_code == 200
    row = page.locator("#live-rows tr", has_text=user_id)
    expect(row).to_have_count(1)
    expect(row).to_have_attribute("data-request-id", response.headers["X-Request-ID"])
    expect(row.locator("td").nth(1)).to_have_text("openai-agent")
    expect(row.locator("td").nth(3)).to_have_text("200")
    expect(row.locator("td").nth(5)).to_have_text("18")
    shot(page, "live-traffic")


def test_live_page_refuses_a_websocket_from_another_site(gateway: GatewayServer) -> None:
    url = f"ws://localhost:{gateway.port}/admin/live"
    with pytest.raises(InvalidStatus):
        connect(url, origin="http://evil.example", open_timeout=10)
    with connect(url, origin=f"http://localhost:{gateway.port}", open_timeout=10) as socket:
        assert "Connected" in str(socket.recv(timeout=10))


@pytest.mark.redis
@pytest.mark.slow
def test_live_page_shows_requests_of_every_worker_through_redis(
    page: Page, tmp_path: Path, upstreams: dict[str, FakeUpstream]
) -> None:
    server = GatewayServer(
        tmp_path, shared_config(upstreams), workers=2, extra_env={"REDIS_URL": REDIS_URL}
    ).start()
    try:
        open_live_page(page, server)
        user = f"user-{uuid.uuid4().hex[:12]}"
        statuses = []
        for worker in server.worker_pids():  # the page is open on one of them
            with server.only(worker), ThreadPoolExecutor(4) as pool:
                statuses += [
                    response.status_code
                    for response in pool.map(lambda _: ask(server, user), range(6))
                ]
        assert statuses == [200] * 12
        lines = [json.loads(line) for line in server.log().splitlines() if line.startswith("{")]
        pids = {line["pid"] for line in lines if line.get("user") == user}
        assert pids == set(server.worker_pids())
        expect(page.locator("#live-rows tr", has_text=user)).to_have_count(12)
    finally:
        server.stop()


def test_a_websocket_to_any_other_path_is_refused_without_a_traceback(
    gateway: GatewayServer,
) -> None:
    logged = len(gateway.log())
    for path in ("/v1/chat/completions", "/admin/nowhere", "/"):
        with pytest.raises(InvalidStatus):
            connect(f"ws://localhost:{gateway.port}{path}", open_timeout=10)
    assert "Traceback" not in gateway.log()[logged:]
