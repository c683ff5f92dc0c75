"""What tracing adds to a request, side by side in one run.

Starts the fake OpenAI upstream, an in-process OTLP/HTTP collector, the bare relay and
three gateways, each on its own SQLite database: ``off`` (``telemetry: {store: false}``,
nothing recorded), ``store`` (the default: every request's spans kept for the admin's
Requests pages) and ``export`` (the store, and every trace exported to the collector).
Slices of each target interleave, as in ``bench.compare``, and the server CPU per
request is printed against ``off``.

    .venv/bin/python -m bench.traces [--rounds 3] [--seconds 3]
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
from tests.otlp import Collector
from tests.server import PROJECT_DIR, GatewayServer, free_port

CLIENTS = (1, 16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    options = parser.parse_args()
    env = {**os.environ, "PYTHONPATH": str(PROJECT_DIR)}
    fake_port, relay_port = free_port(), free_port()
    upstream = f"http://127.0.0.1:{fake_port}/v1"
    collector = Collector().start()
    setups = {
        "off": "telemetry: {store: false}\n",
        "store": "",
        "export": f"telemetry: {{otlp_endpoint: '{collector.endpoint}'}}\n",
    }
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
            for name, extra in setups.items():
                directory = Path(workdir) / name
                directory.mkdir()
                servers.append(GatewayServer(directory, bench_config(upstream, extra)).start())
            targets = [Target("relay", f"http://127.0.0.1:{relay_port}/v1", relay.pid)]
            targets += [
                Target(name, f"{server.url}/v1", server.pid)
                for name, server in zip(setups, servers, strict=True)
            ]
            results = asyncio.run(interleave(targets, CLIENTS, options.rounds, options.seconds))
        finally:
            for server in servers:
                server.stop()
            for process in processes:
                process.terminate()
                process.wait(timeout=10)
            collector.stop()
    print(f"\n{options.rounds} round(s) of {options.seconds:g} s slices; server CPU ms/request")
    for stream in (False, True):
        for clients in CLIENTS:
            cells = {target.name: results[(target.name, stream, clients)] for target in targets}
            mode = "stream" if stream else "json"
            figures = "  ".join(f"{name} {cell.cpu_ms:5.2f}" for name, cell in cells.items())
            errors = sum(cell.errors for cell in cells.values())
            off = cells["off"].cpu_ms
            print(
                f"{mode:6} {clients:2d} clients: {figures}   off/relay "
                f"{off / cells['relay'].cpu_ms:4.2f}  store/off {cells['store'].cpu_ms / off:4.3f}"
                f"  export/off {cells['export'].cpu_ms / off:4.3f}  errors {errors}"
            )
    print(f"spans the collector received: {len(collector.spans)}")


if __name__ == "__main__":
    main()
