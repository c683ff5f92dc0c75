"""Does a flood of wrong passwords hold back a client that knows the right one?

Starts a real gateway whose ``auth.proxy`` password is a Django (PBKDF2) hash, measures a
correct client's ``GET /v1/models`` latency alone, then again while ``--flood`` concurrent
clients send distinct wrong passwords as fast as the gateway answers them, and prints the
ratio (flooded / alone) of the medians. Also printed: one slow hash check as the gateway
runs it (a wrong password, alone), and the correct client's first request under the flood,
before its credential is remembered (it waits its turn for one of the two hash slots).

    .venv/bin/python -m bench.features.auth_flood [--requests 50] [--flood 64]
"""

import argparse
import asyncio
import base64
import statistics
import tempfile
import threading
import time
from pathlib import Path

import httpx
from django.conf import settings

PASSWORD = "the-right-password"


def basic(username: str, password: str) -> dict[str, str]:
    token = base64.b64encode(f"{username}:{password}".encode()).decode()
    return {"Authorization": f"Basic {token}"}


def timed_ms(client: httpx.Client, url: str, headers: dict[str, str]) -> tuple[float, int]:
    started = time.perf_counter()
    status = client.get(url, headers=headers).status_code
    return (time.perf_counter() - started) * 1000, status


class Flood:
    """``clients`` concurrent wrong-password requests, until stopped, on their own thread."""

    def __init__(self, url: str, clients: int) -> None:
        self.url, self.clients, self.sent = url, clients, 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=lambda: asyncio.run(self._run()))

    def __enter__(self) -> "Flood":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()

    async def _run(self) -> None:
        limits = httpx.Limits(max_connections=self.clients)
        async with httpx.AsyncClient(timeout=300, limits=limits) as client:
            await asyncio.gather(*(self._one(client, index) for index in range(self.clients)))

    async def _one(self, client: httpx.AsyncClient, index: int) -> None:
        attempt = 0
        while not self._stop.is_set():
            attempt += 1
            await client.get(self.url, headers=basic("admin", f"wrong-{index}-{attempt}"))
            self.sent += 1


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=50)
    parser.add_argument("--flood", type=int, default=64)
    options = parser.parse_args()

    settings.configure()  # make_password's default hasher, as the gateway's
    from django.contrib.auth.hashers import make_password

    from tests.fakes.openai_upstream import OpenAIUpstream
    from tests.server import GatewayServer

    fake = OpenAIUpstream().start()
    config = (
        f"providers: {{openai: {{api_key: sk-bench, base_url: '{fake.base_url}'}}}}\n"
        "agents: [{name: bench, provider: openai, model: m}]\n"
        f"auth: {{proxy: {{basic: {{password: '{make_password(PASSWORD)}'}}}}}}\n"
    )
    with tempfile.TemporaryDirectory() as workdir:
        server = GatewayServer(Path(workdir), config).start()
        try:
            measure(f"{server.url}/v1/models", options.requests, options.flood)
        finally:
            server.stop()
            fake.stop()


def measure(url: str, count: int, flood_size: int) -> None:
    right = basic("admin", PASSWORD)
    with httpx.Client(timeout=300) as client:
        hash_ms = statistics.median(
            timed_ms(client, url, basic("admin", "wrong"))[0] for _ in range(3)
        )
        with Flood(url, flood_size) as flood:
            time.sleep(1)  # let the flood fill the hash slots
            cold_ms, status = timed_ms(client, url, right)
            assert status == 200, status
            flooded = [timed_ms(client, url, right)[0] for _ in range(count)]
            sent = flood.sent
        alone = [timed_ms(client, url, right)[0] for _ in range(count)]
    ratio = statistics.median(flooded) / statistics.median(alone)
    print(f"one slow hash check (wrong password, alone): {hash_ms:8.1f} ms")
    print(f"first correct request under the flood:      {cold_ms:8.1f} ms (not yet remembered)")
    print(f"correct client alone, median:               {statistics.median(alone):8.2f} ms")
    print(f"correct client under the flood, median:     {statistics.median(flooded):8.2f} ms")
    print(f"correct client under the flood, max:        {max(flooded):8.2f} ms")
    print(f"wrong-password requests answered meanwhile: {sent}")
    print(f"ratio flooded/alone (median): {ratio:.2f}")


if __name__ == "__main__":
    main()
