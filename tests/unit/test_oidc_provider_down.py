"""An identity provider that is down costs one fetch per ``RETRY_AFTER_FAILURE``, not one
per request: requests queued behind a failed fetch, and those that come meanwhile, fail
at once. The provider here is a real HTTP server on loopback that answers every request
with a 500 and counts them."""

import asyncio
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from core.auth import oidc
from core.auth.oidc import OidcProvider, ProviderUnavailable


class FailingProvider(ThreadingHTTPServer):
    requests = 0


class _Handler(BaseHTTPRequestHandler):
    server: FailingProvider

    def do_GET(self) -> None:
        self.server.requests += 1
        self.send_response(500)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture
def provider_down() -> Iterator[FailingProvider]:
    server = FailingProvider(("127.0.0.1", 0), _Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server
    server.shutdown()
    server.server_close()


async def test_concurrent_tokens_share_one_failed_discovery(
    provider_down: FailingProvider,
) -> None:
    provider = OidcProvider(f"http://127.0.0.1:{provider_down.server_address[1]}")
    results = await asyncio.gather(
        *(provider.verify("a.b.c", "gateway") for _ in range(10)), return_exceptions=True
    )
    assert all(isinstance(result, ProviderUnavailable) for result in results)
    assert {str(result) for result in results} == {str(results[0])}
    assert "500" in str(results[0])
    assert provider_down.requests == 1


async def test_the_provider_is_asked_again_once_the_failure_is_old(
    provider_down: FailingProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    provider = OidcProvider(f"http://127.0.0.1:{provider_down.server_address[1]}")
    with pytest.raises(ProviderUnavailable):
        await provider.metadata()
    with pytest.raises(ProviderUnavailable):
        await provider.metadata()
    assert provider_down.requests == 1
    monkeypatch.setattr(oidc, "RETRY_AFTER_FAILURE", 0.0)
    with pytest.raises(ProviderUnavailable):
        await provider.metadata()
    assert provider_down.requests == 2
