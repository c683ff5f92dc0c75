"""What tracing adds to a request, side by side in one run.

Starts the fake OpenAI upstream, an in-process OTLP/HTTP collector, the bare relay and
three gateways, each on its own SQLite database: ``off`` (``telemetry: {store: false}``,
nothing recorded), ``store`` (the default: every request's spans kept for the admin's
Requests pages) and ``export`` (the store, and every trace exported to the collector).
Slices of each target interleave, as in ``bench.floor.compare``, and the server CPU per
request is printed against ``off``. Since a few percent is within this machine's noise
between slices, the tracing work of one request is also timed in this process, without
the servers: recording its spans and their compact form for the store, and the export's
conversion and protobuf encoding (done in the exporter's thread).

    .venv/bin/python -m bench.features.traces [--rounds 3] [--seconds 3]
"""

import argparse
import asyncio
import json
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.sdk.trace import ReadableSpan, SpanProcessor

from agents.schema import TelemetryConfig
from bench.harness.load import Cell, Target, interleave, print_cpu
from bench.harness.processes import floor, gateways
from inference.neutral.types import ChatRequest, ChatResponse, Message, Usage
from inference.telemetry.genai import (
    agent_attributes,
    call_attributes,
    response_attributes,
    usage_attributes,
)
from inference.telemetry.spans import RequestTrace
from inference.telemetry.tracing import Tracing
from tests.otlp import Collector

CLIENTS = (1, 16)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    options = parser.parse_args()
    collector = Collector().start()
    setups = {
        "off": "telemetry: {store: false}\n",
        "store": "",
        "export": f"telemetry: {{otlp_endpoint: '{collector.endpoint}'}}\n",
    }
    try:
        with (
            tempfile.TemporaryDirectory() as workdir,
            floor() as base,
            gateways(Path(workdir), base.upstream, setups) as servers,
        ):
            targets = [base.relay]
            targets += [
                Target(name, f"{server.url}/v1", server.pid) for name, server in servers.items()
            ]
            results = asyncio.run(interleave(targets, CLIENTS, options.rounds, options.seconds))
    finally:
        collector.stop()
    print(f"\n{options.rounds} round(s) of {options.seconds:g} s slices; server CPU ms/request")
    print_cpu(targets, results, CLIENTS, _ratios)
    print(f"spans the collector received: {len(collector.spans)}")
    record_us, export_us = _tracing_work_us()
    off = results[("off", False, 1)].cpu_ms * 1000
    print(
        f"in process, per request: recording the spans and their stored form {record_us:.0f} µs"
        f" ({100 * record_us / off:.1f}% of off's CPU at 1 client), export conversion and "
        f"encoding {export_us:.0f} µs ({100 * export_us / off:.1f}%)"
    )


def _ratios(cells: dict[str, Cell]) -> str:
    off = cells["off"].cpu_ms
    return (
        f"off/relay {off / cells['relay'].cpu_ms:4.2f}  store/off {cells['store'].cpu_ms / off:4.3f}"
        f"  export/off {cells['export'].cpu_ms / off:4.3f}"
    )


def _tracing_work_us(count: int = 3000) -> tuple[float, float]:
    """µs of the tracing work of one plain request: recorded and compacted for the store
    (as JSON, as the database gets it); converted and encoded for export."""
    tracing = Tracing()
    tracing.apply(TelemetryConfig(otlp_endpoint="http://127.0.0.1:9"))
    request = ChatRequest("m", "You are a benchmark.", (Message("user", "question"),))
    reply = ChatResponse("answer", usage=Usage(20, 10), response_id="chatcmpl-1")
    traces: list[RequestTrace] = []

    def one() -> None:
        headers = {"x-request-id": "r"}
        root = tracing.begin("POST /v1/chat/completions", headers, {}, traces.append)
        with root.child("invoke_agent bench") as invoke:
            invoke.set(agent_attributes("bench", "bench", "user"))
            with invoke.child("chat m", "client") as chat, chat.outgoing():
                chat.set(call_attributes("openai", "http://127.0.0.1:9/v1", request, 1, False))
                chat.set(response_attributes(reply, False))
            invoke.set(usage_attributes(reply.usage))
        root.set({"http.response.status_code": 200})
        root.end()
        json.dumps(traces[-1].compact())

    record = _per_call_us(one, count)
    exporter = tracing._exporter
    assert exporter is not None
    exporter.processor.shutdown()
    exporter.processor = capture = _Captured()

    def export() -> None:
        capture.spans.clear()
        exporter.export(traces[-1])
        encode_spans(capture.spans).SerializeToString()

    return record, _per_call_us(export, count)


class _Captured(SpanProcessor):
    """Keeps the spans the exporter would queue, so their encoding can be timed."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_end(self, span: ReadableSpan) -> None:
        self.spans.append(span)


def _per_call_us(work: Callable[[], None], count: int) -> float:
    for _ in range(count // 10):
        work()
    started = time.process_time()
    for _ in range(count):
        work()
    return (time.process_time() - started) / count * 1e6


if __name__ == "__main__":
    main()
