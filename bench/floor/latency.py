"""What a request costs the gateway: median added latency over calling the upstream directly.

Starts the fake OpenAI upstream and a real gateway (daphne, SQLite) on loopback, then
alternates identical chat requests sent straight to the fake and through the gateway,
so both are measured in the same run under the same machine noise.

    .venv/bin/python -m bench.floor.latency [--requests 300]
"""

import argparse
import statistics
import tempfile
from pathlib import Path

import httpx

from bench.harness.workload import bench_config, timed
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.server import GatewayServer

USERS = 10


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=300)
    count = parser.parse_args().requests

    fake = OpenAIUpstream().start()
    config = bench_config(fake.base_url)
    with tempfile.TemporaryDirectory() as workdir:
        server = GatewayServer(Path(workdir), config).start()
        try:
            results = measure(fake, server, count)
        finally:
            server.stop()
            fake.stop()
    report(results, count)


def measure(fake: OpenAIUpstream, server: GatewayServer, count: int) -> dict[str, list[float]]:
    results: dict[str, list[float]] = {
        name: [] for name in ("direct", "gateway", "direct-stream", "gateway-stream")
    }
    with httpx.Client(timeout=30) as client:
        for index in range(count + 20):
            user = f"bench-user-{index % USERS}"
            body = {"model": "m", "messages": [{"role": "user", "content": f"question {index}"}]}
            via = {**body, "model": "bench", "safety_identifier": user}
            stream = {"stream": True, "stream_options": {"include_usage": True}}
            direct, gateway = (
                f"{fake.base_url}/chat/completions",
                f"{server.url}/v1/chat/completions",
            )
            samples = {
                "direct": timed(client, direct, body),
                "gateway": timed(client, gateway, via),
                "direct-stream": timed(client, direct, {**body, **stream}),
                "gateway-stream": timed(client, gateway, {**via, **stream}),
            }
            if index >= 20:  # the first requests warm up connections and caches
                for name, value in samples.items():
                    results[name].append(value)
            fake.requests.clear()
    return results


def report(results: dict[str, list[float]], count: int) -> None:
    medians = {name: statistics.median(values) for name, values in results.items()}
    print(f"{count} requests each, {USERS} users with growing history, medians in ms:")
    for mode in ("", "-stream"):
        direct, gateway = medians[f"direct{mode}"], medians[f"gateway{mode}"]
        label = "streaming" if mode else "non-streaming"
        print(
            f"  {label:14} direct {direct:7.2f}  via gateway {gateway:7.2f}  "
            f"added {gateway - direct:6.2f} ms  ratio {gateway / direct:5.2f}x"
        )


if __name__ == "__main__":
    main()
