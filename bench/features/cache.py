"""What the response cache costs and saves: server CPU per request of a hit against a
miss, and of a miss on a cached agent against the same agent uncached, side by side in
one run with the bare relay as the floor.

Over HTTP: the fake upstream, the bare relay and two gateways, ``plain`` (the bench
agent, without history, uncached) and ``cached`` (the same agent with ``cache: {mode:
exact}``). Three targets on them: ``plain`` and ``miss`` ask a question never asked
before on every request (each miss looks up, calls the upstream and keeps the reply);
``hit`` asks each client's one question again and again (after the warm-up every
request is a hit). Targets: a hit's CPU at most half a miss's; a miss on a cached agent
at most 5 % above the uncached agent.

    .venv/bin/python -m bench.features.cache [--rounds 3] [--seconds 3]
"""

import argparse
import asyncio
import itertools
import tempfile
from pathlib import Path

from bench.harness.load import Cell, Target, interleave, print_cpu
from bench.harness.processes import floor
from tests.server import GatewayServer

CLIENTS = (1, 16)
_fresh = itertools.count()


def config(upstream: str, cache: str = "") -> str:
    """The bench agent without history; ``cache``: its ``cache:`` (none: uncached)."""
    agent = "name: bench, provider: openai, model: m, preamble: You are a benchmark."
    return (
        f"providers: {{openai: {{api_key: sk-bench, base_url: '{upstream}'}}}}\n"
        f"agents: [{{{agent}, history: false{', cache: ' + cache if cache else ''}}}]\n"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir, floor() as base:
        plain_dir, cached_dir = Path(workdir) / "plain", Path(workdir) / "cached"
        plain_dir.mkdir()
        cached_dir.mkdir()
        plain = GatewayServer(plain_dir, config(base.upstream)).start()
        cached = GatewayServer(cached_dir, config(base.upstream, "{mode: exact}")).start()
        try:
            targets = [
                base.relay,
                Target("plain", f"{plain.url}/v1", plain.pid, question=_new),
                Target("miss", f"{cached.url}/v1", cached.pid, question=_new),
                Target("hit", f"{cached.url}/v1", cached.pid, question=_again),
            ]
            results = asyncio.run(interleave(targets, CLIENTS, options.rounds, options.seconds))
        finally:
            plain.stop()
            cached.stop()
    print(f"\n{options.rounds} round(s) of {options.seconds:g} s slices; server CPU ms/request")
    print_cpu(targets, results, CLIENTS, _ratios)


def _new(user: int, index: int) -> str:
    return f"question {next(_fresh)} of a benchmark, never asked before"


def _again(user: int, index: int) -> str:
    return "the one question of a benchmark, asked again and again"


def _ratios(cells: dict[str, Cell]) -> str:
    hit, miss, plain = cells["hit"].cpu_ms, cells["miss"].cpu_ms, cells["plain"].cpu_ms
    return f"hit/miss {hit / miss:4.2f} (target <= 0.50)  miss/plain {miss / plain:4.2f} (<= 1.05)"


if __name__ == "__main__":
    main()
