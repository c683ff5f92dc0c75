"""Memory after many requests: the resident size of every server process at the end
(issue 12's target: under 125 MB per process after 100,000 requests).

Starts the fake OpenAI upstream (in this process) and the gateway (``--workers N``,
SQLite, history replay on: up to 20 turns per user), then sends ``--requests`` chat
requests from ``--clients`` concurrent clients: every other one streamed, every fifth with
a token budget, spread over ``--users`` users. With ``--production``, the gateway has the
production config of ``bench.floor.production`` (history, cost, API keys, the trace store,
deployments), each user calling with a key of their own. ``--python`` serves with
another virtualenv's interpreter, to measure a production install (``requirements.txt``
only, as ``scripts/serve`` and the Dockerfile set up): the server loads some libraries of
the test extras when they are installed (httpx loads rich, click and pygments for its
command line; django.test, which ninja imports, loads jinja2). It samples the RSS of each
server process (the supervisor and its workers under ``--workers``) along the way; the
figures at the end come last.

    .venv/bin/python -m bench.floor.memory [--requests 100000] [--clients 16] [--workers 1]
        [--users 200] [--production] [--python .venv-production/bin/python]
"""

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

from bench.floor import production
from bench.harness.processes import mint_key
from bench.harness.workload import bench_config, mixed_body
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.server import GatewayServer

TARGET_MB = 125
REPORTS = 10  # lines of the running report


def server_rss_mb(pid: int) -> dict[int, float]:
    """Resident size of the server process and its children, by pid."""
    root = psutil.Process(pid)
    sizes: dict[int, float] = {}
    for process in [root, *root.children(recursive=True)]:
        try:
            sizes[process.pid] = process.memory_info().rss / 2**20
        except psutil.NoSuchProcess:
            continue
    return sizes


async def send(
    server: GatewayServer,
    fake: OpenAIUpstream,
    requests: int,
    clients: int,
    users: int,
    keys: tuple[str, ...] = (),
) -> int:
    """Send the requests; the number that failed."""
    counter = iter(range(requests))
    failed = 0
    report_every = max(1, requests // REPORTS)
    started = time.monotonic()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=server.url, timeout=60, limits=limits) as client:

        async def client_loop() -> None:
            nonlocal failed
            for index in counter:
                headers = {"Authorization": f"Bearer {keys[index % users]}"} if keys else None
                response = await client.post(
                    "/v1/chat/completions", json=mixed_body("bench", index, users), headers=headers
                )
                failed += response.status_code != 200
                if (index + 1) % report_every == 0:
                    fake.requests.clear()  # the fake keeps what it got: not the server's memory
                    sizes = " ".join(f"{mb:6.1f}" for mb in server_rss_mb(server.pid).values())
                    elapsed = time.monotonic() - started
                    print(f"{index + 1:8d} {elapsed:7.0f} {failed:6d}  {sizes}", flush=True)

        print(f"{'requests':>8} {'t (s)':>7} {'errors':>6}  RSS MB per process", flush=True)
        await asyncio.gather(*(client_loop() for _ in range(clients)))
    return failed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=100_000)
    parser.add_argument("--clients", type=int, default=16)
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument("--users", type=int, default=200)
    parser.add_argument("--production", action="store_true", help="the production config")
    parser.add_argument("--python", help="the interpreter that serves (default: this one)")
    options = parser.parse_args()
    fake = OpenAIUpstream().start()
    if options.production:
        config = production.config(fake.base_url, "production")
    else:
        config = bench_config(fake.base_url, "history: {max_messages: 40, max_tokens: 100000}\n")
    with tempfile.TemporaryDirectory() as workdir:
        server = GatewayServer(
            Path(workdir), config, workers=options.workers, python=options.python
        ).start()
        try:
            users = range(options.users) if options.production else ()
            keys = tuple(mint_key(server, f"bench-user-{user}") for user in users)
            failed = asyncio.run(
                send(server, fake, options.requests, options.clients, options.users, keys)
            )
            sizes = server_rss_mb(server.pid)
        finally:
            server.stop()
            fake.stop()
    print(f"\nrequests: {options.requests}, errors: {failed}, workers: {options.workers}")
    print(f"served by {options.python or sys.executable}")
    for pid, mb in sizes.items():
        verdict = "met" if mb < TARGET_MB else "MISSED"
        print(f"RSS of process {pid}: {mb:.1f} MB (target < {TARGET_MB} MB: {verdict})")


if __name__ == "__main__":
    main()
