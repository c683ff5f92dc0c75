"""Admin write latency against a plain ruamel round trip, on a 200-line config and on a
large one.

Starts a gateway (daphne, SQLite) on a 200-line config in the original format, updates
one agent through ``PUT /admin/agents/{name}`` again and again (each write: lock, read,
edit, validate, write, revision, reload), and times a plain ruamel.yaml load + dump of
the same file in the same run; then the same on the config with a long block scalar
added (``--large-kb``, many alike lines: the shape that once made a write quadratic).
Prints the medians and their ratios; the ratio staying flat as the file grows is the
write path staying linear.

    .venv/bin/python -m bench.admin.admin_writes [--writes 40] [--large-kb 400]
"""

import argparse
import io
import statistics
import tempfile
import time
from pathlib import Path

import httpx
from ruamel.yaml import YAML

from tests.configs import ORIGINAL_EXAMPLE
from tests.server import GatewayServer

TARGET_MS = 50.0
LINES = 200


def config_text() -> str:
    """The original example, with agents appended until it has ``LINES`` lines."""
    text = ORIGINAL_EXAMPLE.read_text().replace("\nagents:\n", "\nagents:\n{extra}", 1)
    extra, index = "", 0
    while len(text.format(extra=extra).splitlines()) < LINES:
        extra += (
            f"  - name: bench-{index}\n    provider: openai\n    model: gpt-4o-mini\n"
            f"    preamble: Agent {index} of the benchmark.\n"
        )
        index += 1
    return text.format(extra=extra)


def round_trip_ms(text: str, repeats: int) -> float:
    yaml = YAML()
    timings = []
    for _ in range(repeats):
        started = time.perf_counter()
        out = io.StringIO()
        yaml.dump(yaml.load(text), out)
        timings.append((time.perf_counter() - started) * 1000)
    return statistics.median(timings)


def write_ms(server: GatewayServer, writes: int) -> list[float]:
    timings = []
    with httpx.Client(base_url=f"{server.url}/admin", timeout=30) as client:
        body = client.get("/agents/bench-0", headers={"Accept": "application/json"}).json()
        for index in range(writes):
            body["model"] = f"model-{index}"
            started = time.perf_counter()
            response = client.put("/agents/bench-0", json=body)
            timings.append((time.perf_counter() - started) * 1000)
            response.raise_for_status()
    return timings


def large_config_text(kilobytes: int) -> str:
    """The 200-line config with an agent whose preamble is ``kilobytes`` of alike lines."""
    lines = "\n".join(["      A line of the runbook."] * (kilobytes * 1024 // 30))
    agent = f"  - name: runbook\n    provider: openai\n    model: m\n    preamble: |\n{lines}\n"
    return config_text().replace("\nagents:\n", f"\nagents:\n{agent}", 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--writes", type=int, default=40)
    parser.add_argument("--large-kb", type=int, default=400)
    arguments = parser.parse_args()
    measure(config_text(), arguments.writes)
    measure(large_config_text(arguments.large_kb), max(5, arguments.writes // 8))


def measure(text: str, writes: int) -> None:
    with tempfile.TemporaryDirectory() as workdir:
        server = GatewayServer(Path(workdir), text).start()
        try:
            write_ms(server, 5)  # warm-up: imports, first revision, database connection
            timings = write_ms(server, writes)
        finally:
            server.stop()
    baseline = round_trip_ms(text, writes)
    median = statistics.median(timings)
    print(
        f"config: {len(text.splitlines())} lines, {len(text) // 1024} KB; "
        f"{writes} writes through PUT /admin/agents/…"
    )
    print(f"ruamel round trip (load + dump) of the file: median {baseline:.1f} ms")
    print(
        f"admin write: median {median:.1f} ms, worst {max(timings):.1f} ms "
        f"(target under {TARGET_MS:.0f} ms)"
    )
    print(f"ratio admin write / round trip: {median / baseline:.2f}")
    print(f"admin write per 100 KB of file: {median / (len(text) / 102400):.1f} ms\n")


if __name__ == "__main__":
    main()
