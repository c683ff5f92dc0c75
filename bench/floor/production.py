"""The gateway with the realistic production config against the bare relay, and what each
feature of that config adds, side by side in one run.

Starts the fake OpenAI upstream, the bare relay, and one gateway (one worker, its own
SQLite database, 20 stored turns per user, so 40 history messages are replayed) per
setup:

- ``minimal``: the agent with ``history: false`` and no trace store: the pipeline alone;
- ``history``: history replay on (every setup below has it too);
- ``cost``: a price for the model (``pricing``);
- ``keys``: ``auth.proxy.api_keys`` and a minted key per user, without limits;
- ``store``: the built-in trace store (``telemetry.store``);
- ``deployments``: the agent served by two deployments of the same upstream;
- ``production``: all of them at once.

Slices of every target interleave; the server CPU per request comes first, then each
feature's own cost (its setup against ``history``; history against ``minimal``), then
``production`` against the relay with the issue's targets: CPU per request at most
1.25x, added time to first token (over calling the fake directly) at most 1.25x at one
client, throughput at least 0.8x at 16 clients.

    .venv/bin/python -m bench.floor.production [--rounds 3] [--seconds 3] [--quick]
"""

import argparse
import asyncio
import tempfile
from pathlib import Path

from bench.harness.load import STORED_TURNS, Cell, Target, interleave, percentile, prefill, say
from bench.harness.processes import floor, mint_key
from tests.server import GatewayServer

CLIENTS = (1, 16)
TARGET = 1.25  # CPU per request and added time to first token, against the relay's
THROUGHPUT = 0.8  # requests per second at 16 clients, against the relay's
HISTORY = f"history: {{max_messages: {2 * STORED_TURNS}, max_tokens: 100000}}\n"
STORE_OFF = "telemetry: {store: false}\n"
PRICED = 'pricing: {"openai/m": {input: 0.4, output: 1.6}}\n'
KEYS = "auth: {proxy: {api_keys: true}}\n"
AGENT = "agents: [{name: bench, provider: openai, model: m, preamble: You are a benchmark.%s}]\n"
DEPLOYED = ", deployments: [{provider: openai, model: m}]"
SETUPS = ("minimal", "history", "cost", "keys", "store", "deployments", "production")


def config(upstream: str, setup: str) -> str:
    """The bench agent on ``upstream`` with the features of ``setup``."""
    features = {
        "minimal": (), "history": (), "cost": ("cost",), "keys": ("keys",),
        "store": ("store",), "deployments": ("deployments",),
        "production": ("cost", "keys", "store", "deployments"),
    }[setup]  # fmt: skip
    text = f"providers: {{openai: {{api_key: sk-bench, base_url: '{upstream}'}}}}\n"
    agent_fields = DEPLOYED if "deployments" in features else ""
    if setup == "minimal":
        agent_fields += ", history: false"
    text += AGENT % agent_fields + HISTORY
    text += "" if "store" in features else STORE_OFF
    text += PRICED if "cost" in features else ""
    text += KEYS if "keys" in features else ""
    return text


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--quick", action="store_true", help="one round of 1.5 s slices")
    options = parser.parse_args()
    rounds, seconds = (1, 1.5) if options.quick else (options.rounds, options.seconds)
    servers: dict[str, GatewayServer] = {}
    with tempfile.TemporaryDirectory() as workdir, floor() as base:
        try:
            targets = [base.direct, base.relay]
            for setup in SETUPS:
                directory = Path(workdir) / setup
                directory.mkdir()
                server = servers[setup] = GatewayServer(directory, config(base.upstream, setup))
                server.start()
                users = [f"bench-user-{user}" for user in range(max(CLIENTS))]
                keyed = setup in ("keys", "production")
                keys = tuple(mint_key(server, user) for user in users) if keyed else ()
                targets.append(Target(setup, f"{server.url}/v1", server.pid, keys))
            say(f"storing {STORED_TURNS} turns for each of {max(CLIENTS)} users")
            asyncio.run(_prefill(targets[2:]))
            results = asyncio.run(interleave(targets, CLIENTS, rounds, seconds))
        finally:
            for server in servers.values():
                server.stop()
    report(targets, results, rounds, seconds)


async def _prefill(targets: list[Target]) -> None:
    for target in targets:
        await prefill(target, max(CLIENTS))


def report(
    targets: list[Target], results: dict[tuple[str, bool, int], Cell], rounds: int, seconds: float
) -> None:
    print(f"\n{rounds} round(s) of {seconds:g} s slices; server CPU ms/request")
    names = [target.name for target in targets if target.name != "direct"]
    print(f"{'':17}" + "".join(f"{name:>12}" for name in names))
    for stream in (False, True):
        for clients in CLIENTS:
            cells = [results[(name, stream, clients)] for name in names]
            line = "".join(f"{cell.cpu_ms:12.2f}" for cell in cells)
            errors = sum(cell.errors for cell in cells)
            print(
                f"{'stream' if stream else 'json':6} {clients:2d} clients{line}   errors {errors}"
            )
    print("\neach feature's own CPU per request (ms, and its share of the relay's):")
    for stream in (False, True):
        for clients in CLIENTS:

            def cpu(name: str, stream: bool = stream, clients: int = clients) -> float:
                return results[(name, stream, clients)].cpu_ms

            relay = cpu("relay")
            added = {"history": cpu("history") - cpu("minimal")}
            for feature in ("cost", "keys", "store", "deployments"):
                added[feature] = cpu(feature) - cpu("history")
            shown = "  ".join(
                f"{name} {value:+5.2f} ({value / relay:+4.0%})" for name, value in added.items()
            )
            print(f"{'stream' if stream else 'json':6} {clients:2d} clients: {shown}")
    print("\nproduction against the relay:")
    for stream in (False, True):
        for clients in CLIENTS:
            ratio = (
                results[("production", stream, clients)].cpu_ms
                / results[("relay", stream, clients)].cpu_ms
            )
            mode = "stream" if stream else "json"
            label = f"CPU/request, {mode}, {clients:2d} clients"
            print(f"  {label:36} {_verdict(ratio, TARGET, at_most=True)}")
    direct = percentile(results[("direct", True, 1)].first_bytes, 0.5)
    added = {
        name: percentile(results[(name, True, 1)].first_bytes, 0.5) - direct
        for name in ("relay", "production")
    }
    ratio = added["production"] / added["relay"]
    label = "added time to first token, 1 client"
    print(
        f"  {label:36} {_verdict(ratio, TARGET, at_most=True)}"
        f"   ({added['production']:.2f} ms against {added['relay']:.2f} ms)"
    )
    for stream in (False, True):
        ratio = results[("production", stream, 16)].rate / results[("relay", stream, 16)].rate
        label = f"throughput, {'stream' if stream else 'json'}, 16 clients"
        print(f"  {label:36} {_verdict(ratio, THROUGHPUT, at_most=False)}")


def _verdict(ratio: float, limit: float, at_most: bool) -> str:
    met = ratio <= limit if at_most else ratio >= limit
    sign = "<=" if at_most else ">="
    return f"{ratio:5.2f}  (target {sign} {limit}: {'met' if met else 'MISSED'})"


if __name__ == "__main__":
    main()
