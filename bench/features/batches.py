"""A 1,000-line batch beside live traffic, in one run.

Starts the fake OpenAI upstream and one gateway (``batches`` at its defaults,
``concurrency: 4`` and ``yield_above: 8``, unless told otherwise), then measures, in
turn:

- ``live``: the p50 latency of live chat completions (``--clients`` sequential clients)
  with no batch running;
- ``batch``: the wall time of a batch of ``--lines`` chat lines with no live traffic;
- ``both``: the same batch again with the same live traffic running beside it until it
  ends: the batch's wall time and the live p50.

- ``native``: the same batch on a second gateway whose provider has ``batch: native``
  (``poll_seconds: 0.5``): one provider batch at the fake, whose Batch API completes it
  at the first poll.

It prints the figures and the ratios both/live (live p50), both/batch and native/batch
(wall time).

    .venv/bin/python -m bench.features.batches [--lines 1000] [--clients 2]
        [--concurrency 4] [--yield-above 8]
"""

import argparse
import json
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path

import httpx
import openai

from bench.harness.processes import floor, gateways
from bench.harness.workload import bench_config, timed
from tests.server import GatewayServer

LIVE_SECONDS = 10.0  # how long the live traffic alone is measured


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--lines", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=2)
    parser.add_argument("--concurrency", type=int, default=4, help="batches.concurrency")
    parser.add_argument("--yield-above", type=int, default=8, help="batches.yield_above")
    options = parser.parse_args()
    batches = f"concurrency: {options.concurrency}, yield_above: {options.yield_above}"
    extra = f"files: {{dir: uploads}}\nbatches: {{{batches}}}\n"
    native_extra = f"files: {{dir: uploads}}\nbatches: {{{batches}, poll_seconds: 0.5}}\n"
    with (
        tempfile.TemporaryDirectory() as workdir,
        floor() as base,
        gateways(Path(workdir), base.upstream, {"gateway": extra}) as servers,
    ):
        url = f"{servers['gateway'].url}/v1"
        alone = _live(
            url, options.clients, lambda started: time.perf_counter() - started > LIVE_SECONDS
        )
        batch_seconds = _batch(url, options.lines)
        done = threading.Event()
        beside: list[float] = []
        live = threading.Thread(
            target=lambda: beside.extend(_live(url, options.clients, lambda _: done.is_set()))
        )
        live.start()
        try:
            both_seconds = _batch(url, options.lines)
        finally:
            done.set()
            live.join()
        native_config = bench_config(base.upstream, native_extra, provider="batch: native")
        (Path(workdir) / "native").mkdir()
        native = GatewayServer(Path(workdir) / "native", native_config).start()
        try:
            native_seconds = _batch(f"{native.url}/v1", options.lines)
        finally:
            native.stop()
    live_p50, both_p50 = statistics.median(alone), statistics.median(beside)
    print(
        f"\n{options.lines}-line batch, {options.clients} live clients, concurrency "
        f"{options.concurrency}, yield_above {options.yield_above}"
    )
    print(f"live alone      p50 {live_p50:7.2f} ms  ({len(alone)} requests)")
    print(f"batch alone     {batch_seconds:7.2f} s  ({options.lines / batch_seconds:.0f} lines/s)")
    print(
        f"batch + live    {both_seconds:7.2f} s  live p50 {both_p50:7.2f} ms ({len(beside)} requests)"
    )
    print(f"native batch    {native_seconds:7.2f} s  (one provider batch, polled every 0.5 s)")
    print(
        f"ratios: live p50 both/alone {both_p50 / live_p50:4.2f}  batch time both/alone {both_seconds / batch_seconds:4.2f}"
        f"  native/alone {native_seconds / batch_seconds:4.2f}"
    )


def _live(url: str, clients: int, stop: Callable[[float], bool]) -> list[float]:
    """The latencies (ms) of chat completions sent by ``clients`` sequential clients until
    ``stop(started)`` says so."""
    latencies: list[float] = []
    started = time.perf_counter()

    def client(number: int) -> None:
        with httpx.Client(timeout=60) as http:
            index = 0
            while not stop(started):
                body = {
                    "model": "bench",
                    "messages": [{"role": "user", "content": f"live {number} {index}"}],
                    "safety_identifier": f"live-{number}",
                    "metadata": {"history": "off"},
                }
                latencies.append(timed(http, f"{url}/chat/completions", body))
                index += 1

    threads = [threading.Thread(target=client, args=(number,)) for number in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return latencies


def _batch(url: str, lines: int) -> float:
    """Seconds from creating a batch of ``lines`` chat lines to its end."""
    sdk = openai.OpenAI(base_url=url, api_key="none", default_headers={"X-User-Id": "batcher"})
    requests = [
        {
            "custom_id": f"line-{number}",
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": {"model": "bench", "messages": [{"role": "user", "content": f"line {number}"}]},
        }
        for number in range(lines)
    ]
    data = "\n".join(json.dumps(request) for request in requests).encode()
    upload = sdk.files.create(file=("lines.jsonl", data), purpose="batch")
    started = time.perf_counter()
    batch = sdk.batches.create(
        input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
    )
    while batch.status not in ("completed", "failed", "cancelled", "expired"):
        time.sleep(0.2)
        batch = sdk.batches.retrieve(batch.id)
    elapsed = time.perf_counter() - started
    assert batch.status == "completed" and batch.request_counts is not None
    assert batch.request_counts.completed == lines, batch.request_counts
    return elapsed


if __name__ == "__main__":
    main()
