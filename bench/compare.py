"""The gateway against the stack's floor, side by side in one run (issue 12's targets).

Starts on loopback: the fake OpenAI upstream (its own process), the bare relay
(``bench.relay``: Django + daphne + httpx, nothing else) and the gateway with one worker
and with ``--workers N``, both on one SQLite database with history replay on and 20
stored turns per user. Then, for non-streaming and streaming requests at 1, 16 and 64
concurrent clients, it runs each target in turn for a short slice, several rounds
interleaved, so machine noise falls on all of them alike. Server CPU is the CPU time of
the target's process tree (workers included) over the requests it served. The numbers
and the ratios against the targets come last.

The load generator runs on the same cores as the servers, so it is aiohttp (about
0.3 ms of CPU a request here) rather than httpx (about 2 ms, more with many connections):
what it spends is taken from the servers, and with httpx it took more than the relay's
whole request did.

    .venv/bin/python -m bench.compare [--quick] [--workers 2] [--rounds 3] [--seconds 3]
"""

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import psutil

from bench.workload import bench_config
from tests.server import PROJECT_DIR, GatewayServer, free_port

CLIENTS = (1, 16, 64)
STORED_TURNS = 20
MAX_REQUESTS_PER_SLICE = 20_000  # a bound on each slice, whatever the speed


@dataclass
class Target:
    name: str
    url: str  # the base URL of the /v1 API
    pid: int  # the root of its process tree
    keys: tuple[str, ...] = ()  # an API key per user (bench-user-N), where it needs one

    def headers(self, user: int) -> dict[str, str] | None:
        if not self.keys:
            return None
        return {"Authorization": f"Bearer {self.keys[user % len(self.keys)]}"}


@dataclass
class Cell:
    latencies: list[float] = field(default_factory=list)  # ms
    first_bytes: list[float] = field(default_factory=list)  # ms, streaming only
    overheads: list[float] = field(default_factory=list)  # X-Gateway-Overhead-Ms
    errors: int = 0
    seconds: float = 0.0
    cpu: float = 0.0  # seconds of server CPU

    @property
    def count(self) -> int:
        return len(self.latencies)

    @property
    def rate(self) -> float:
        return self.count / self.seconds if self.seconds else 0.0

    @property
    def cpu_ms(self) -> float:
        return self.cpu * 1000 / self.count if self.count else float("nan")


def body(user: int, index: int, stream: bool) -> dict[str, Any]:
    request: dict[str, Any] = {
        "model": "bench",
        "messages": [{"role": "user", "content": f"question {index} of a benchmark"}],
        "safety_identifier": f"bench-user-{user}",
    }
    if stream:
        request |= {"stream": True, "stream_options": {"include_usage": True}}
    return request


def tree_cpu(pid: int) -> float:
    """User plus system CPU seconds of a process and its living descendants."""
    root = psutil.Process(pid)
    total = 0.0
    for process in [root, *root.children(recursive=True)]:
        try:
            times = process.cpu_times()
        except psutil.NoSuchProcess:
            continue
        total += times.user + times.system
    return total


async def one_request(
    session: aiohttp.ClientSession,
    target: Target,
    request: dict[str, Any],
    cell: Cell,
    user: int = 0,
) -> None:
    started = time.perf_counter()
    first: float | None = None
    url, headers = f"{target.url}/chat/completions", target.headers(user)
    try:
        async with session.post(url, json=request, headers=headers) as response:
            async for _ in response.content.iter_any():
                if first is None:
                    first = time.perf_counter()
            status, overhead = response.status, response.headers.get("x-gateway-overhead-ms")
    except aiohttp.ClientError:
        status, overhead = 0, None
    if status != 200:
        cell.errors += 1
        return
    cell.latencies.append((time.perf_counter() - started) * 1000)
    if request.get("stream") and first is not None:
        cell.first_bytes.append((first - started) * 1000)
    if overhead is not None:
        cell.overheads.append(float(overhead))


async def run_slice(target: Target, clients: int, stream: bool, seconds: float, cell: Cell) -> None:
    """``clients`` concurrent clients, each sending one request after the other."""
    connector = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        await one_request(session, target, body(0, 0, stream), Cell())  # open a connection
        counter = iter(range(MAX_REQUESTS_PER_SLICE))
        cpu_before, started = tree_cpu(target.pid), time.perf_counter()
        deadline = started + seconds

        async def client_loop(user: int) -> None:
            for index in counter:
                if time.perf_counter() >= deadline:
                    return
                await one_request(session, target, body(user, index, stream), cell, user)

        await asyncio.gather(*(client_loop(user) for user in range(clients)))
        cell.seconds += time.perf_counter() - started
        cell.cpu += tree_cpu(target.pid) - cpu_before


async def prefill(gateway: Target, users: int) -> None:
    """20 stored turns for every user the clients will be, through the gateway itself."""
    limits = httpx.Limits(max_connections=16)
    async with httpx.AsyncClient(timeout=60, limits=limits) as client:
        semaphore = asyncio.Semaphore(16)

        async def turn(user: int, index: int) -> None:
            async with semaphore:
                response = await client.post(
                    f"{gateway.url}/chat/completions", json=body(user, index, False)
                )
                if response.status_code != 200:
                    raise RuntimeError(f"prefill: {response.status_code} {response.text}")

        for index in range(STORED_TURNS):
            await asyncio.gather(*(turn(user, index) for user in range(users)))


def start_process(command: list[str], env: dict[str, str], port: int) -> subprocess.Popen[bytes]:
    process = subprocess.Popen(
        command, env=env, cwd=PROJECT_DIR, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
            return process
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"{command} did not start listening on port {port}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one round of 1.5 s slices")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one slice")
    options = parser.parse_args()
    rounds, seconds = (1, 1.5) if options.quick else (options.rounds, options.seconds)
    env = {**os.environ, "PYTHONPATH": str(PROJECT_DIR)}
    fake_port, relay_port = free_port(), free_port()
    upstream = f"http://127.0.0.1:{fake_port}/v1"
    python = sys.executable
    processes: list[subprocess.Popen[bytes]] = []
    servers: list[GatewayServer] = []
    with tempfile.TemporaryDirectory() as workdir:
        try:
            fake = start_process(
                [python, "-m", "tests.fakes.openai_upstream", "--port", str(fake_port)],
                env,
                fake_port,
            )
            processes.append(fake)
            relay_command = [python, "-m", "daphne", "-v", "0", "-p", str(relay_port)]
            relay = start_process(
                [*relay_command, "bench.relay:application"],
                {**env, "RELAY_UPSTREAM": upstream},
                relay_port,
            )
            processes.append(relay)
            config = Path(workdir) / "gateway.yaml"
            history = f"history: {{max_messages: {2 * STORED_TURNS}, max_tokens: 100000}}\n"
            config.write_text(bench_config(upstream, history))
            database = f"sqlite:///{Path(workdir) / 'gateway.sqlite3'}"
            for workers in (1, options.workers):
                directory = Path(workdir) / f"workers-{workers}"
                directory.mkdir()
                server = GatewayServer(directory, None, database, config, workers=workers)
                servers.append(server.start())
            targets = [
                Target("direct", upstream, fake.pid),
                Target("relay", f"http://127.0.0.1:{relay_port}/v1", relay.pid),
                Target("gateway", f"{servers[0].url}/v1", servers[0].pid),
                Target(f"gateway x{options.workers}", f"{servers[1].url}/v1", servers[1].pid),
            ]
            results, own_cpu = asyncio.run(measure(targets, rounds, seconds))
        finally:
            for server in servers:
                server.stop()
            for process in processes:
                process.terminate()
                process.wait(timeout=10)
    report(targets, results, rounds, seconds, options.workers)
    requests = sum(cell.count for cell in results.values())
    print(
        f"load generator (this process, same cores): {own_cpu * 1000 / requests:.2f} ms CPU "
        "per request: where it nears a target's own, req/s measures the generator too"
    )


async def measure(
    targets: list[Target], rounds: int, seconds: float
) -> tuple[dict[tuple[str, bool, int], Cell], float]:
    """The cells, and the CPU seconds this process spent sending their requests."""
    say(f"storing {STORED_TURNS} turns for each of {max(CLIENTS)} users")
    await prefill(targets[2], max(CLIENTS))
    for target in targets:  # warm up: connections, caches, the workers' first requests
        await run_slice(target, 16, False, 0.5, Cell())
    results = {
        (target.name, stream, clients): Cell()
        for target in targets
        for stream in (False, True)
        for clients in CLIENTS
    }
    own_cpu = tree_cpu(os.getpid())
    for stream in (False, True):
        for clients in CLIENTS:
            say(f"{'streaming' if stream else 'non-streaming'}, {clients} clients")
            for round_number in range(rounds):
                shift = round_number % len(targets)  # each round starts with another target
                for target in targets[shift:] + targets[:shift]:
                    cell = results[(target.name, stream, clients)]
                    await run_slice(target, clients, stream, seconds, cell)
    return results, tree_cpu(os.getpid()) - own_cpu


async def interleave(
    targets: list[Target], clients: tuple[int, ...], rounds: int, seconds: float
) -> dict[tuple[str, bool, int], Cell]:
    """Warm each target up, then measure them in interleaved slices: each round starts
    with another target, so a drift of the machine spreads over all of them."""
    for target in targets:
        await run_slice(target, 16, False, 0.5, Cell())
    results = {
        (target.name, stream, count): Cell()
        for target in targets
        for stream in (False, True)
        for count in clients
    }
    for stream in (False, True):
        for count in clients:
            say(f"{'streaming' if stream else 'non-streaming'}, {count} clients")
            for round_number in range(rounds):
                shift = round_number % len(targets)
                for target in targets[shift:] + targets[:shift]:
                    await run_slice(
                        target, count, stream, seconds, results[(target.name, stream, count)]
                    )
    return results


def say(message: str) -> None:
    print(f"... {message}", file=sys.stderr, flush=True)


def percentile(values: list[float], fraction: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(fraction * len(ordered)))]


def report(
    targets: list[Target],
    results: dict[tuple[str, bool, int], Cell],
    rounds: int,
    seconds: float,
    workers: int,
) -> None:
    print(
        f"\n{rounds} round(s) of {seconds:g} s slices per target and cell; history replay on, "
        f"{STORED_TURNS} stored turns per user; latencies in ms; CPU = server CPU ms/request"
    )
    header = f"{'target':12} {'mode':7} {'clients':>7} {'req/s':>8} {'p50':>7} {'p99':>7}"
    print(f"{header} {'CPU':>6} {'TTFB p50':>8} {'overhd':>7} {'errors':>6}")
    for stream in (False, True):
        for clients in CLIENTS:
            for target in targets:
                cell = results[(target.name, stream, clients)]
                overhead = statistics.median(cell.overheads) if cell.overheads else float("nan")
                print(
                    f"{target.name:12} {'stream' if stream else 'json':7} {clients:7d} "
                    f"{cell.rate:8.1f} {percentile(cell.latencies, 0.5):7.2f} "
                    f"{percentile(cell.latencies, 0.99):7.2f} {cell.cpu_ms:6.2f} "
                    f"{percentile(cell.first_bytes, 0.5):8.2f} {overhead:7.2f} {cell.errors:6d}"
                )
    report_ratios(results, workers)


def report_ratios(results: dict[tuple[str, bool, int], Cell], workers: int) -> None:
    def cell(name: str, stream: bool, clients: int) -> Cell:
        return results[(name, stream, clients)]

    def verdict(ratio: float, limit: float, at_most: bool) -> str:
        met = ratio <= limit if at_most else ratio >= limit
        return f"{ratio:5.2f}  (target {'<=' if at_most else '>='} {limit}: {'met' if met else 'MISSED'})"

    print("\nratios against the targets (gateway = one worker):")
    for stream in (False, True):
        mode = "stream" if stream else "json"
        for clients in CLIENTS:
            gateway, relay = cell("gateway", stream, clients), cell("relay", stream, clients)
            print(f"  CPU/request gateway/relay, {mode}, {clients:2d} clients: ", end="")
            print(verdict(gateway.cpu_ms / relay.cpu_ms, 1.25, True))
        for clients in (16, 64):
            gateway, relay = cell("gateway", stream, clients), cell("relay", stream, clients)
            print(f"  req/s gateway/relay, {mode}, {clients:2d} clients:       ", end="")
            print(verdict(gateway.rate / relay.rate, 0.8, False))
        for clients in (16, 64):
            many, one = (
                cell(f"gateway x{workers}", stream, clients),
                cell("gateway", stream, clients),
            )
            print(f"  req/s {workers} workers/1, {mode}, {clients:2d} clients:       ", end="")
            print(verdict(many.rate / one.rate, 1.7, False))
    for clients in CLIENTS:
        direct = percentile(cell("direct", True, clients).first_bytes, 0.5)
        added = {
            name: percentile(cell(name, True, clients).first_bytes, 0.5) - direct
            for name in ("gateway", "relay")
        }
        print(
            f"  added time to first byte gateway/relay, {clients:2d} clients "
            f"({added['gateway']:.2f} / {added['relay']:.2f} ms): ",
            end="",
        )
        print(verdict(added["gateway"] / added["relay"], 1.25, True))
    gateway_json = cell("gateway", False, 1)
    if gateway_json.overheads:
        added_ms = percentile(gateway_json.latencies, 0.5) - percentile(
            cell("direct", False, 1).latencies, 0.5
        )
        print(
            f"  cross-check, json, 1 client: X-Gateway-Overhead-Ms p50 "
            f"{statistics.median(gateway_json.overheads):.2f} ms against added latency "
            f"(gateway p50 - direct p50) {added_ms:.2f} ms"
        )


if __name__ == "__main__":
    main()
