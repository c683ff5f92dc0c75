"""What cost and API keys add to a request, side by side in one run.

Starts the fake OpenAI upstream, the bare relay and two gateways on one SQLite database
each: ``plain`` (the bench config, no price known, no keys) and one with the same agent
priced through ``pricing:`` and ``auth.proxy.api_keys: true``, called as ``money`` (every
request with a minted key of its user, without limits: key lookup and cost) and as
``limited`` (keys with rpm, tpm and a USD budget: each request is also checked and
reserved against its key). Slices of each target interleave, as in ``bench.floor.compare``,
and the server CPU per request is printed against ``plain``.

    .venv/bin/python -m bench.features.money [--rounds 3] [--seconds 3]
"""

import argparse
import asyncio
import tempfile
from pathlib import Path

from bench.harness.load import Cell, Target, interleave, print_cpu
from bench.harness.processes import floor, gateways, mint_key

CLIENTS = (1, 16)
LIMITS = ("--rpm", "1000000000", "--tpm", "1000000000", "--budget-usd", "1000000")
MONEY = 'pricing: {"openai/m": {input: 0.4, output: 1.6}}\nauth: {proxy: {api_keys: true}}\n'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    options = parser.parse_args()
    setups = {"plain": "", "money": MONEY}
    with (
        tempfile.TemporaryDirectory() as workdir,
        floor() as base,
        gateways(Path(workdir), base.upstream, setups) as servers,
    ):
        users = [f"bench-user-{user}" for user in range(max(CLIENTS))]
        keys = tuple(mint_key(servers["money"], user) for user in users)
        limited = tuple(mint_key(servers["money"], user, *LIMITS) for user in users)
        plain, money = servers["plain"], servers["money"]
        targets = [
            base.relay,
            Target("plain", f"{plain.url}/v1", plain.pid),
            Target("money", f"{money.url}/v1", money.pid, keys),
            Target("limited", f"{money.url}/v1", money.pid, limited),
        ]
        results = asyncio.run(interleave(targets, CLIENTS, options.rounds, options.seconds))
    print(f"\n{options.rounds} round(s) of {options.seconds:g} s slices; server CPU ms/request")
    print_cpu(targets, results, CLIENTS, _ratios)


def _ratios(cells: dict[str, Cell]) -> str:
    plain = cells["plain"].cpu_ms
    money, limited = cells["money"].cpu_ms / plain, cells["limited"].cpu_ms / plain
    return f"money/plain {money:4.2f}  limited/plain {limited:4.2f}"


if __name__ == "__main__":
    main()
