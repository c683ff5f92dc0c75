"""What cost and API keys add to a request, side by side in one run.

Starts the fake OpenAI upstream, the bare relay and two gateways on one SQLite database
each: ``plain`` (the bench config, no price known, no keys) and one with the same agent
priced through ``pricing:`` and ``auth.proxy.api_keys: true``, called as ``money`` (every
request with a minted key of its user, without limits: key lookup and cost) and as
``limited`` (keys with rpm, tpm and a USD budget: each request is also checked and
reserved against its key). Slices of each target interleave, as in ``bench.compare``,
and the server CPU per request is printed against ``plain``.

    .venv/bin/python -m bench.money [--rounds 3] [--seconds 3]
"""

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from bench.compare import Target, interleave, start_process
from bench.workload import bench_config
from tests.server import PROJECT_DIR, GatewayServer, free_port

CLIENTS = (1, 16)
LIMITS = ("--rpm", "1000000000", "--tpm", "1000000000", "--budget-usd", "1000000")
MONEY = 'pricing: {"openai/m": {input: 0.4, output: 1.6}}\nauth: {proxy: {api_keys: true}}\n'


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    options = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(PROJECT_DIR)}
    fake_port, relay_port = free_port(), free_port()
    upstream = f"http://127.0.0.1:{fake_port}/v1"
    processes: list[subprocess.Popen[bytes]] = []
    servers: list[GatewayServer] = []
    with tempfile.TemporaryDirectory() as workdir:
        try:
            python = sys.executable
            fake_command = [python, "-m", "tests.fakes.openai_upstream", "--port", str(fake_port)]
            processes.append(start_process(fake_command, env, fake_port))
            relay_command = [python, "-m", "daphne", "-v", "0", "-p", str(relay_port)]
            relay_env = {**env, "RELAY_UPSTREAM": upstream}
            relay = start_process(
                [*relay_command, "bench.relay:application"], relay_env, relay_port
            )
            processes.append(relay)
            for name, extra in (("plain", ""), ("money", MONEY)):
                directory = Path(workdir) / name
                directory.mkdir()
                servers.append(GatewayServer(directory, bench_config(upstream, extra)).start())
            users = [f"bench-user-{user}" for user in range(max(CLIENTS))]
            keys = tuple(_mint(servers[1], user) for user in users)
            limited = tuple(_mint(servers[1], user, *LIMITS) for user in users)
            targets = [
                Target("relay", f"http://127.0.0.1:{relay_port}/v1", relay.pid),
                Target("plain", f"{servers[0].url}/v1", servers[0].pid),
                Target("money", f"{servers[1].url}/v1", servers[1].pid, keys),
                Target("limited", f"{servers[1].url}/v1", servers[1].pid, limited),
            ]  # fmt: skip
            results = asyncio.run(interleave(targets, CLIENTS, options.rounds, options.seconds))
        finally:
            for server in servers:
                server.stop()
            for process in processes:
                process.terminate()
                process.wait(timeout=10)
    print(f"\n{options.rounds} round(s) of {options.seconds:g} s slices; server CPU ms/request")
    for stream in (False, True):
        for clients in CLIENTS:
            cells = {target.name: results[(target.name, stream, clients)] for target in targets}
            mode = "stream" if stream else "json"
            figures = "  ".join(f"{name} {cell.cpu_ms:5.2f}" for name, cell in cells.items())
            errors = sum(cell.errors for cell in cells.values())
            plain = cells["plain"].cpu_ms
            print(
                f"{mode:6} {clients:2d} clients: {figures}   money/plain "
                f"{cells['money'].cpu_ms / plain:4.2f}  limited/plain "
                f"{cells['limited'].cpu_ms / plain:4.2f}  errors {errors}"
            )


def _mint(server: GatewayServer, user: str, *limits: str) -> str:
    command = [
        sys.executable, str(PROJECT_DIR / "manage.py"), "create_api_key", "--user", user,
        "--name", "bench", *limits,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=server.env, check=True)
    return done.stdout.strip()


if __name__ == "__main__":
    main()
