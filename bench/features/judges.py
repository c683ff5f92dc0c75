"""What judges cost a reply: median latency of an agent with two judges at sampling rate
1.0 against the same agent without judges, interleaved in one run.

Judges start once the reply has been sent and run in the background. A pause after each
request lets that background work finish before the next request is timed, so the
figure is the reply's own path: what judges must leave unchanged. (Without the pause the
judges of one request share the CPU with whichever request comes next, which measures
the order of the requests rather than the judges.)

The fake OpenAI upstream answers both the agent and the judges.

    .venv/bin/python -m bench.features.judges [--requests 200] [--pause-ms 40]
"""

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import httpx

from bench.harness.workload import timed
from tests.fakes.base import Recorded, Reply
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.server import GatewayServer

VERDICT = {"accuracy": {"score": 8, "reasoning": "Right."}}


def config(fake: OpenAIUpstream) -> str:
    judge = "provider: openai, model: judge, sampling_rate: 1.0, rubrics: {accuracy: Right?}"
    return (
        "default_user_id: bench\n"
        f"providers: {{openai: {{api_key: sk-bench, base_url: '{fake.base_url}'}}}}\n"
        f"judges: [{{name: first, {judge}}}, {{name: second, {judge}}}]\n"
        "agents:\n"
        "  - {name: plain, provider: openai, model: m}\n"
        "  - {name: judged, provider: openai, model: m, judges: [first, second]}\n"
    )


def is_judge_call(recorded: Recorded) -> bool:
    return "impartial judge" in json.dumps(recorded.body)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--pause-ms", type=float, default=40.0)
    arguments = parser.parse_args()
    count = arguments.requests

    fake = OpenAIUpstream().start()
    fake.answer_when(is_judge_call, Reply.of_text(json.dumps(VERDICT)))
    with tempfile.TemporaryDirectory() as workdir:
        server = GatewayServer(Path(workdir), config(fake)).start()
        try:
            samples = measure(server, count, arguments.pause_ms / 1000)
            judged_calls = sum(1 for recorded in fake.requests if is_judge_call(recorded))
        finally:
            server.stop()
            fake.stop()
    plain, judged = statistics.median(samples["plain"]), statistics.median(samples["judged"])
    print(f"{count} requests each, medians in ms; {judged_calls} judge calls ran:")
    print(
        f"  without judges {plain:6.2f}  with 2 judges {judged:6.2f}  "
        f"ratio {judged / plain:4.2f}x  added {judged - plain:+.2f} ms"
    )


def measure(server: GatewayServer, count: int, pause: float) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"plain": [], "judged": []}
    url = f"{server.url}/v1/chat/completions"
    with httpx.Client(timeout=30) as client:
        for index in range(count + 20):
            for model in ("plain", "judged"):
                body = {
                    "model": model,
                    "messages": [{"role": "user", "content": f"question {index}"}],
                    "metadata": {"history": "off"},
                }
                elapsed = timed(client, url, body)
                if index >= 20:
                    samples[model].append(elapsed)
                time.sleep(pause)
    return samples


if __name__ == "__main__":
    main()
