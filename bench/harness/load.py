"""The load of the side-by-side benchmarks: targets, cells of measurements, slices of
concurrent clients, and the interleaving of targets so machine noise falls on all alike.

The load generator runs on the same cores as the servers, so it is aiohttp (about
0.3 ms of CPU a request here) rather than httpx (about 2 ms, more with many connections):
what it spends is taken from the servers, and with httpx it took more than the relay's
whole request did.
"""

import asyncio
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import aiohttp
import httpx
import psutil

STORED_TURNS = 20
MAX_REQUESTS_PER_SLICE = 20_000  # a bound on each slice, whatever the speed


@dataclass
class Target:
    name: str
    url: str  # the base URL of the /v1 API
    pid: int  # the root of its process tree
    keys: tuple[str, ...] = ()  # an API key per user (bench-user-N), where it needs one
    # What request ``index`` of ``user`` asks (None: question <index> of a benchmark).
    question: Callable[[int, int], str] | None = None
    sends: dict[str, str] = field(default_factory=dict)  # headers of every request (a peer's)
    streams: bool = True  # False: its streams are not measured (a peer whose streams fail)

    def asks(self, user: int, index: int) -> str:
        if self.question is None:
            return f"question {index} of a benchmark"
        return self.question(user, index)

    def headers(self, user: int) -> dict[str, str] | None:
        headers = dict(self.sends)
        if self.keys:
            headers["Authorization"] = f"Bearer {self.keys[user % len(self.keys)]}"
        return headers or None


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


def body(user: int, index: int, stream: bool, question: str | None = None) -> dict[str, Any]:
    request: dict[str, Any] = {
        "model": "bench",
        "messages": [{"role": "user", "content": question or f"question {index} of a benchmark"}],
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


async def run_slice(
    target: Target,
    clients: int,
    stream: bool,
    seconds: float,
    cell: Cell,
    requests: int = MAX_REQUESTS_PER_SLICE,
) -> None:
    """``clients`` concurrent clients, each sending one request after the other, for
    ``seconds`` or ``requests`` requests, whichever ends first."""
    connector = aiohttp.TCPConnector(limit=clients)
    timeout = aiohttp.ClientTimeout(total=60)
    async with aiohttp.ClientSession(connector=connector, timeout=timeout) as session:
        await one_request(session, target, body(0, 0, stream), Cell())  # open a connection
        counter = iter(range(requests))
        cpu_before, started = tree_cpu(target.pid), time.perf_counter()
        deadline = started + seconds

        async def client_loop(user: int) -> None:
            for index in counter:
                if time.perf_counter() >= deadline:
                    return
                request = body(user, index, stream, target.asks(user, index))
                await one_request(session, target, request, cell, user)

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
                    f"{gateway.url}/chat/completions",
                    json=body(user, index, False),
                    headers=gateway.headers(user),
                )
                if response.status_code != 200:
                    raise RuntimeError(f"prefill: {response.status_code} {response.text}")

        for index in range(STORED_TURNS):
            await asyncio.gather(*(turn(user, index) for user in range(users)))


async def interleave(
    targets: list[Target], clients: tuple[int, ...], rounds: int, seconds: float
) -> dict[tuple[str, bool, int], Cell]:
    """Warm each target up, then measure them in interleaved slices: each round starts
    with another target, so a drift of the machine spreads over all of them. The stream
    cells of a target that does not stream stay empty."""
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
                    if stream and not target.streams:
                        continue
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


def print_cpu(
    targets: list[Target],
    results: dict[tuple[str, bool, int], Cell],
    clients: tuple[int, ...],
    ratios: Callable[[dict[str, Cell]], str],
) -> None:
    """A line per mode and number of clients: each target's server CPU per request, then
    ``ratios`` of those cells and the errors."""
    for stream in (False, True):
        for count in clients:
            cells = {target.name: results[(target.name, stream, count)] for target in targets}
            figures = "  ".join(f"{name} {cell.cpu_ms:5.2f}" for name, cell in cells.items())
            errors = sum(cell.errors for cell in cells.values())
            mode = "stream" if stream else "json"
            print(f"{mode:6} {count:2d} clients: {figures}   {ratios(cells)}  errors {errors}")
