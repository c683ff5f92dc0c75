"""Memory after many requests: the resident size of every server process right after
start and at the end, against the bare relay's after the same requests (issue 58's
target: at most 100 MB per process after 100,000 requests).

Starts the fake OpenAI upstream (in this process), the bare relay
(``bench.harness.relay``: Django + daphne + httpx, nothing else) and the gateway
(``--workers N``, SQLite, history replay on: up to 20 turns per user), then sends
``--requests`` chat requests from ``--clients`` concurrent clients to the relay and then
as many to the gateway: every other one streamed, every fifth with a token budget,
spread over ``--users`` users. With ``--production``, the gateway has the production
config of ``bench.floor.production`` (history, cost, API keys, the trace store,
deployments), each user calling with a key of their own. ``--python`` serves both with
another virtualenv's interpreter, to measure a production install (``requirements.txt``
only, as ``scripts/serve`` and the Dockerfile set up) rather than the test environment,
whose test tools a library may load when they are present. ``--no-relay`` measures the
gateway alone. It samples the RSS of each server process (the supervisor and its workers
under ``--workers``) along the way; the figures at the end come last, with the gateway's
against the relay's.

    .venv/bin/python -m bench.floor.memory [--requests 100000] [--clients 16] [--workers 1]
        [--users 200] [--production] [--python .venv-production/bin/python] [--no-relay]
"""

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

import httpx
import psutil

from bench.floor import production
from bench.harness.processes import mint_key, start_process
from bench.harness.workload import bench_config, mixed_body
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.server import PROJECT_DIR, GatewayServer, free_port

TARGET_MB = 100
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


def show(sizes: dict[int, float]) -> str:
    return " ".join(f"{mb:6.1f}" for mb in sizes.values())


async def send(
    url: str,
    pid: int,
    fake: OpenAIUpstream,
    requests: int,
    clients: int,
    users: int,
    keys: tuple[str, ...] = (),
) -> int:
    """Send the requests to the server at ``url`` (process ``pid``); the number that
    failed."""
    counter = iter(range(requests))
    failed = 0
    report_every = max(1, requests // REPORTS)
    started = time.monotonic()
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    async with httpx.AsyncClient(base_url=url, timeout=60, limits=limits) as client:

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
                    elapsed = time.monotonic() - started
                    sizes = show(server_rss_mb(pid))
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
    parser.add_argument("--no-relay", action="store_true", help="the gateway alone")
    options = parser.parse_args()
    python = options.python or sys.executable
    fake = OpenAIUpstream().start()
    if options.production:
        config = production.config(fake.base_url, "production")
    else:
        config = bench_config(fake.base_url, "history: {max_messages: 40, max_tokens: 100000}\n")
    relay_sizes: tuple[float, float] | None = None
    with tempfile.TemporaryDirectory() as workdir:
        try:
            if not options.no_relay:
                relay_sizes = measure_relay(python, fake, options)
            server = GatewayServer(Path(workdir), config, workers=options.workers, python=python)
            server.start()
            try:
                users = range(options.users) if options.production else ()
                keys = tuple(mint_key(server, f"bench-user-{user}") for user in users)
                at_start = server_rss_mb(server.pid)
                print(f"gateway right after start: {show(at_start)} MB", flush=True)
                failed = asyncio.run(
                    send(
                        server.url, server.pid, fake, options.requests, options.clients,
                        options.users, keys,
                    )
                )  # fmt: skip
                at_end = server_rss_mb(server.pid)
            finally:
                server.stop()
        finally:
            fake.stop()
    print(f"\nrequests: {options.requests}, errors: {failed}, workers: {options.workers}")
    print(f"served by {python}")
    if relay_sizes is not None:
        print(f"relay: {relay_sizes[0]:.1f} MB after start, {relay_sizes[1]:.1f} MB at the end")
    for pid, mb in at_end.items():
        verdict = "met" if mb <= TARGET_MB else "MISSED"
        against = f", {mb / relay_sizes[1]:.2f}x the relay's" if relay_sizes else ""
        print(
            f"RSS of process {pid}: {at_start.get(pid, 0):.1f} MB after start, {mb:.1f} MB "
            f"at the end{against} (target <= {TARGET_MB} MB: {verdict})"
        )


def measure_relay(
    python: str, fake: OpenAIUpstream, options: argparse.Namespace
) -> tuple[float, float]:
    """The relay's RSS right after start and after the same requests, in MB."""
    port = free_port()
    command = [
        python,
        "-m",
        "daphne",
        "-v",
        "0",
        "-p",
        str(port),
        "bench.harness.relay:application",
    ]
    env = {**os.environ, "PYTHONPATH": str(PROJECT_DIR), "RELAY_UPSTREAM": fake.base_url}
    relay = start_process(command, env, port)
    try:
        at_start = server_rss_mb(relay.pid)[relay.pid]
        print(f"relay right after start: {at_start:.1f} MB", flush=True)
        url = f"http://127.0.0.1:{port}"
        failed = asyncio.run(
            send(url, relay.pid, fake, options.requests, options.clients, options.users)
        )
        if failed:
            print(f"relay: {failed} requests failed", flush=True)
        return at_start, server_rss_mb(relay.pid)[relay.pid]
    finally:
        relay.terminate()
        relay.wait(timeout=10)


if __name__ == "__main__":
    main()
