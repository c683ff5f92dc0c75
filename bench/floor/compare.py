"""The gateway against the stack's floor, side by side in one run (issue 12's targets).

Starts on loopback: the fake OpenAI upstream (its own process), the bare relay
(``bench.harness.relay``: Django + daphne + httpx, nothing else) and the gateway with one worker
and with ``--workers N``, both on one SQLite database with history replay on and 20
stored turns per user. Then, for non-streaming and streaming requests at 1, 16 and 64
concurrent clients, it runs each target in turn for a short slice, several rounds
interleaved, so machine noise falls on all of them alike. Server CPU is the CPU time of
the target's process tree (workers included) over the requests it served. The numbers
and the ratios against the targets come last.

The load generator (``bench.harness.load``) runs on the same cores as the servers.

With ``--baseline DIR`` (another checkout, e.g. ``git worktree add /tmp/base <commit>``),
that checkout's gateway is one more target, ``baseline`` (one worker, the same config and
database), so a change and the commit before it are measured in one run, and the ratios
end with this gateway's against it.

    .venv/bin/python -m bench.floor.compare [--quick] [--workers 2] [--rounds 3] [--seconds 3]
        [--baseline DIR]
"""

import argparse
import asyncio
import os
import statistics
import tempfile
from pathlib import Path

from bench.harness.load import (
    STORED_TURNS,
    Cell,
    Target,
    interleave,
    percentile,
    prefill,
    say,
    tree_cpu,
)
from bench.harness.processes import floor
from bench.harness.workload import bench_config
from tests.server import GatewayServer

CLIENTS = (1, 16, 64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one round of 1.5 s slices")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one slice")
    parser.add_argument("--baseline", type=Path, help="another checkout to measure beside")
    options = parser.parse_args()
    rounds, seconds = (1, 1.5) if options.quick else (options.rounds, options.seconds)
    servers: list[GatewayServer] = []
    with tempfile.TemporaryDirectory() as workdir, floor() as base:
        try:
            config = Path(workdir) / "gateway.yaml"
            history = f"history: {{max_messages: {2 * STORED_TURNS}, max_tokens: 100000}}\n"
            config.write_text(bench_config(base.upstream, history))
            database = f"sqlite:///{Path(workdir) / 'gateway.sqlite3'}"
            for workers in (1, options.workers):
                directory = Path(workdir) / f"workers-{workers}"
                directory.mkdir()
                server = GatewayServer(directory, None, database, config, workers=workers)
                servers.append(server.start())
            targets = [
                base.direct,
                base.relay,
                Target("gateway", f"{servers[0].url}/v1", servers[0].pid),
                Target(f"gateway x{options.workers}", f"{servers[1].url}/v1", servers[1].pid),
            ]
            if options.baseline is not None:
                directory = Path(workdir) / "baseline"
                directory.mkdir()
                server = GatewayServer(
                    directory, None, database, config, project_dir=options.baseline.resolve()
                )
                servers.append(server.start())
                targets.append(Target("baseline", f"{server.url}/v1", server.pid))
            results, own_cpu = asyncio.run(measure(targets, rounds, seconds))
        finally:
            for server in servers:
                server.stop()
    report(targets, results, rounds, seconds, options.workers)
    if options.baseline is not None:
        report_against_baseline(results)
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
    own_cpu = tree_cpu(os.getpid())
    results = await interleave(targets, CLIENTS, rounds, seconds)
    return results, tree_cpu(os.getpid()) - own_cpu


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


def report_against_baseline(results: dict[tuple[str, bool, int], Cell]) -> None:
    """This checkout's gateway against the baseline's, cell by cell (1.00: the same)."""
    print("\nthis gateway / baseline (one worker each; CPU and p50 under 1 are better):")
    for stream in (False, True):
        for clients in CLIENTS:
            ours, theirs = (
                results[("gateway", stream, clients)],
                results[("baseline", stream, clients)],
            )
            print(
                f"  {'stream' if stream else 'json':6} {clients:2d} clients: "
                f"CPU/request {ours.cpu_ms / theirs.cpu_ms:5.2f}  "
                f"req/s {ours.rate / theirs.rate:5.2f}  "
                f"p50 {percentile(ours.latencies, 0.5) / percentile(theirs.latencies, 0.5):5.2f}"
            )


if __name__ == "__main__":
    main()
