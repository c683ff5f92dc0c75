"""What one round of the tool loop costs: median time a request takes per agent-tool round.

A real gateway (daphne, SQLite) serves an agent whose tool is the real MCP server of the
tests (stdio); the fake OpenAI upstream answers with ``--rounds`` rounds of tool calls,
then text. The same request with no tool round, and a call straight to the fake, are
measured in the same run (interleaved), so:

    per round        = (with rounds - without rounds) / rounds
    loop overhead    = per round - one direct upstream call
                       (the gateway's own work per round: encoding, the MCP call, decoding)

    .venv/bin/python -m bench.features.toolloop [--requests 100] [--rounds 3]
"""

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

import httpx

from bench.harness.workload import timed
from tests.fakes.base import Reply
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.mcp_servers import GREETER
from tests.server import GatewayServer


def config(fake: OpenAIUpstream) -> str:
    return (
        "default_user_id: bench\n"
        f"providers: {{openai: {{api_key: sk-bench, base_url: '{fake.base_url}'}}}}\n"
        f"mcp: {{local: {{transport: stdio, command: '{sys.executable}', args: ['{GREETER}']}}}}\n"
        "agents: [{name: bench, provider: openai, model: m, mcp_tools: [{server: local, only: [add]}]}]\n"
    )


def wait_for_mcp(server: GatewayServer) -> None:
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        state = httpx.get(
            f"{server.url}/admin/mcp/local/state", headers={"Accept": "application/json"}
        )
        if state.status_code == 200 and state.json()["state"] == "connected":
            return
        time.sleep(0.2)
    raise RuntimeError("the MCP server did not connect")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()

    fake = OpenAIUpstream().start()
    with tempfile.TemporaryDirectory() as workdir:
        server = GatewayServer(Path(workdir), config(fake)).start()
        try:
            wait_for_mcp(server)
            samples = measure(fake, server, arguments.requests, arguments.rounds)
        finally:
            server.stop()
            fake.stop()
    report(samples, arguments.requests, arguments.rounds)


def measure(
    fake: OpenAIUpstream, server: GatewayServer, count: int, rounds: int
) -> dict[str, list[float]]:
    samples: dict[str, list[float]] = {"direct": [], "no rounds": [], "with rounds": []}
    question = {"messages": [{"role": "user", "content": "Add."}]}
    with httpx.Client(timeout=60) as client:
        for index in range(count + 10):
            direct = timed(client, f"{fake.base_url}/chat/completions", {"model": "m", **question})
            plain = timed(
                client, f"{server.url}/v1/chat/completions", {"model": "bench", **question}
            )
            fake.script(
                *[Reply.of_tool_calls(("add", {"a": index, "b": 1}))] * rounds,
                Reply.of_text("Done."),
            )
            looped = timed(
                client, f"{server.url}/v1/chat/completions", {"model": "bench", **question}
            )
            if index >= 10:  # warm-up: connections, caches
                samples["direct"].append(direct)
                samples["no rounds"].append(plain)
                samples["with rounds"].append(looped)
            fake.requests.clear()
    return samples


def report(samples: dict[str, list[float]], count: int, rounds: int) -> None:
    medians = {name: statistics.median(values) for name, values in samples.items()}
    per_round = (medians["with rounds"] - medians["no rounds"]) / rounds
    print(f"{count} requests each, {rounds} tool rounds (MCP over stdio), medians in ms:")
    for name, value in medians.items():
        print(f"  {name:12} {value:7.2f}")
    print(f"  per round    {per_round:7.2f}")
    print(
        f"  loop overhead per round (per round - one direct call): {per_round - medians['direct']:.2f} ms"
    )


if __name__ == "__main__":
    main()
