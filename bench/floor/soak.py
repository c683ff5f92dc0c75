"""Soak: steady load against a gateway and the fake upstream, watching the server's
memory and open files for growth (target: under 5% RSS growth after warm-up).

Starts the fake OpenAI upstream and a real gateway (daphne, SQLite) on loopback, sends
chat requests (plain and streamed, a few users, some with budget caps) at a fixed rate
for ``--seconds``, and samples the server process's RSS and open file descriptors from
/proc. The growth figures come last.

    .venv/bin/python -m bench.floor.soak [--seconds 3600] [--rate 20] [--warmup 0.1]
"""

import argparse
import os
import tempfile
import time
from pathlib import Path

import httpx

from bench.harness.workload import bench_config, mixed_body
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.server import GatewayServer

USERS = 20
SAMPLES = 20  # lines of the running report


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise RuntimeError(f"no VmRSS for process {pid}")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, default=3600.0)
    parser.add_argument("--rate", type=float, default=20.0, help="requests per second")
    parser.add_argument("--warmup", type=float, default=0.1, help="share of the run")
    options = parser.parse_args()

    fake = OpenAIUpstream().start()
    config = bench_config(fake.base_url)
    with tempfile.TemporaryDirectory() as workdir:
        server = GatewayServer(Path(workdir), config).start()
        try:
            soak(server, fake, options.seconds, options.rate, options.warmup)
        finally:
            server.stop()
            fake.stop()


def soak(
    server: GatewayServer, fake: OpenAIUpstream, seconds: float, rate: float, warmup: float
) -> None:
    pid = server.pid
    interval = 1.0 / rate
    sample_every = seconds / SAMPLES
    started = time.monotonic()
    warm: tuple[int, int] | None = None
    sent = failed = 0
    next_sample = started
    print(f"soak: {seconds:.0f} s at {rate:g} req/s against pid {pid}")
    print(f"{'t (s)':>7} {'requests':>9} {'errors':>7} {'RSS (KiB)':>10} {'fds':>5}")
    with httpx.Client(base_url=server.url, timeout=30) as client:
        while (now := time.monotonic()) - started < seconds:
            response = client.post("/v1/chat/completions", json=mixed_body("bench", sent, USERS))
            failed += response.status_code != 200
            sent += 1
            fake.requests.clear()  # the fake keeps what it received: not the server's memory
            if warm is None and now - started >= seconds * warmup:
                warm = (rss_kib(pid), open_fds(pid))
            if now >= next_sample:
                print(
                    f"{now - started:7.0f} {sent:9d} {failed:7d} {rss_kib(pid):10d} "
                    f"{open_fds(pid):5d}",
                    flush=True,
                )
                next_sample += sample_every
            time.sleep(max(0.0, started + sent * interval - time.monotonic()))
    final = (rss_kib(pid), open_fds(pid))
    baseline = warm or final
    growth = 100.0 * (final[0] - baseline[0]) / baseline[0]
    print(f"requests: {sent}, errors: {failed}")
    print(f"RSS after warm-up: {baseline[0]} KiB, at the end: {final[0]} KiB")
    print(f"open fds after warm-up: {baseline[1]}, at the end: {final[1]}")
    print(f"RSS growth after warm-up: {growth:+.1f}% (target: under 5%)")


if __name__ == "__main__":
    main()
