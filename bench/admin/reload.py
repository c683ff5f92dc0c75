"""How long a hand edit of the config takes to show in ``/v1/models``.

Appends an agent to the file of a running gateway (daphne, SQLite) and polls
``/v1/models`` every 5 ms until it appears; repeats and prints the median and the worst.

    .venv/bin/python -m bench.admin.reload [--edits 10]
"""

import argparse
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from tests.server import GatewayServer

BASE = "providers: {openai: {api_key: sk-bench}}\nagents:\n  - {name: a0, provider: openai, model: m}\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--edits", type=int, default=10)
    edits = parser.parse_args().edits
    with tempfile.TemporaryDirectory() as workdir:
        server = GatewayServer(Path(workdir), BASE).start()
        try:
            delays = [edit_and_wait(server, index) for index in range(1, edits + 1)]
        finally:
            server.stop()
    print(
        f"{edits} hand edits: median {statistics.median(delays):.0f} ms, "
        f"worst {max(delays):.0f} ms until the new agent is listed"
    )


def edit_and_wait(server: GatewayServer, index: int) -> float:
    text = server.config_path.read_text() + f"  - {{name: a{index}, provider: openai, model: m}}\n"
    started = time.perf_counter()
    server.config_path.write_text(text)
    with httpx.Client() as client:
        while f'"a{index}"' not in client.get(f"{server.url}/v1/models").text:
            time.sleep(0.005)
    return (time.perf_counter() - started) * 1000


if __name__ == "__main__":
    main()
