"""What long-term memory costs: a recall over 10,000 memories, and an agent with memory
against the same agent without it, side by side in one run.

1. In process, on a SQLite database of its own: one user with 10,000 memories of
   1,536 dimensions. The CPU of a recall's database and similarity work (the rows'
   version check, the vectors held in process, the top 5 by cosine), first cold (the
   vectors read and normalized), then warm, as every later turn of that user. The target
   is under 20 ms of CPU. And the CPU of reading the query's embedding from an OpenAI
   answer (a dense vector of 1,536 float32 values) and handing it to the recall: as
   JSON numbers, as the gateway once asked and a server that ignores
   ``encoding_format`` answers, and as base64, as it asks now.
2. Over HTTP: the fake upstream (chat and embeddings), the bare relay and two gateways:
   ``plain`` (the bench agent) and ``memory`` (the same agent with ``memory`` and 50
   memories for each bench user, so each request embeds its message and recalls). Its
   embedder asks for 1,536 dimensions (text-embedding-3-small's), so each recall reads
   a vector of the size a real one does. The server CPU per request is printed against
   ``plain``. Extraction is left out: it is a model call of its own, after the reply.

With ``--baseline DIR`` (another checkout, e.g. ``git worktree add /tmp/base <commit>``),
that checkout's memory gateway is one more target, ``memory-base`` (the same config and
memories), so a change to memory and the commit before it are measured in one run.

    .venv/bin/python -m bench.features.memory [--rounds 3] [--seconds 3] [--memories 10000]
        [--baseline DIR]
"""

import argparse
import asyncio
import base64
import os
import tempfile
import time
import timeit
from pathlib import Path

import httpx
import numpy as np

from bench.harness.load import Cell, Target, interleave, print_cpu
from bench.harness.processes import floor
from bench.harness.workload import bench_config
from tests.server import PROJECT_DIR, GatewayServer

CLIENTS = (1, 16)
DIMENSIONS = 1536
TARGET_MS = 20.0
MEMORY = (
    f"embedders: [{{name: embed, provider: openai, model: e, dimensions: {DIMENSIONS}}}]\n"
    "agents:\n"
    "  - {name: bench, provider: openai, model: m, preamble: You are a benchmark.,"
    " memory: {embedder: embed}}\n"
)
SEEDED = 50  # memories of each bench user, over HTTP


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    parser.add_argument("--memories", type=int, default=10_000)
    parser.add_argument("--baseline", type=Path, help="another checkout to measure beside")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        cold, warm = _recall_cpu(Path(workdir), options.memories)
    print(f"recall over {options.memories} memories of {DIMENSIONS} dimensions, CPU ms:")
    print(f"  cold (first recall of the process) {cold:7.2f}")
    print(f"  warm (every later one)            {warm:7.2f}   target < {TARGET_MS:g}: ", end="")
    print(f"{warm / TARGET_MS:4.2f} of it")
    numbers, encoded = _reading_cpu()
    print(f"reading one embedding of {DIMENSIONS} dimensions from the upstream, CPU us:")
    print(f"  as JSON numbers {numbers:7.1f}")
    print(f"  as base64       {encoded:7.1f}   base64/numbers {encoded / numbers:4.2f}")
    _over_http(options.rounds, options.seconds, options.baseline)


def _recall_cpu(workdir: Path, count: int) -> tuple[float, float]:
    """CPU milliseconds of one cold and of one warm recall (median of 50)."""
    os.environ["DATABASE_URL"] = f"sqlite:///{workdir / 'memories.sqlite3'}"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "gateway.settings")
    import django

    django.setup()
    from django.core.management import call_command
    from django.utils import timezone

    from inference.memory.store import add_memories, shelf

    call_command("migrate", verbosity=0)
    rng = np.random.default_rng(7)
    vectors = rng.standard_normal((count, DIMENSIONS), dtype=np.float32)
    facts = [(f"Fact number {index} about the user.", vectors[index]) for index in range(count)]
    for start in range(0, count, 1000):
        add_memories("bench", "agent", "embed", facts[start : start + 1000], "", timezone.now())
    query = rng.standard_normal(DIMENSIONS, dtype=np.float32)

    def one_recall() -> float:
        started = time.process_time()
        shelf("bench", "agent", "embed").nearest(query, 5)
        return (time.process_time() - started) * 1000

    cold = one_recall()
    warm = sorted(one_recall() for _ in range(50))[25]
    return cold, warm


def _reading_cpu() -> tuple[float, float]:
    """CPU microseconds of reading one embedding from an answer's body and making the
    recall's query of it, as numbers and as base64 (best of 5 runs of 1,000)."""
    from core import fastjson
    from inference.providers.openai_format import embedding_vector

    drawn = np.random.default_rng(7).standard_normal(DIMENSIONS).astype(np.float32)
    vector = drawn / np.linalg.norm(drawn)
    bodies = [
        fastjson.dumps({"data": [{"index": 0, "embedding": embedding}]})
        for embedding in (vector.tolist(), base64.b64encode(vector.tobytes()).decode())
    ]

    def cpu(body: bytes) -> float:
        def read() -> None:
            embedding = fastjson.loads(body)["data"][0]["embedding"]
            np.asarray(embedding_vector(embedding), dtype=np.float32)

        runs = timeit.repeat(read, number=1000, repeat=5, timer=time.process_time)
        return min(runs) * 1000

    numbers, encoded = (cpu(body) for body in bodies)
    return numbers, encoded


def _over_http(rounds: int, seconds: float, baseline: Path | None) -> None:
    with tempfile.TemporaryDirectory() as workdir, floor() as base:
        config = bench_config(base.upstream).split("agents:")[0] + MEMORY
        servers = {
            "plain": (bench_config(base.upstream), PROJECT_DIR),
            "memory": (config, PROJECT_DIR),
        }
        if baseline is not None:
            servers["memory-base"] = (config, baseline.resolve())
        started: list[GatewayServer] = []
        targets = [base.relay]
        try:
            for name, (text, project) in servers.items():
                directory = Path(workdir) / name
                directory.mkdir()
                server = GatewayServer(directory, text, project_dir=project).start()
                started.append(server)
                if name != "plain":
                    _seed(server)
                targets.append(Target(name, f"{server.url}/v1", server.pid))
            results = asyncio.run(interleave(targets, CLIENTS, rounds, seconds))
        finally:
            for server in started:
                server.stop()
    print(f"\n{rounds} round(s) of {seconds:g} s slices; server CPU ms/request")
    print_cpu(targets, results, CLIENTS, _ratios)


def _seed(server: GatewayServer) -> None:
    with httpx.Client(base_url=server.url, timeout=30) as client:
        for user in range(max(CLIENTS)):
            for index in range(SEEDED):
                fact = {"user": f"bench-user-{user}", "agent": "bench", "text": f"fact {index}"}
                client.post("/admin/memories", json=fact).raise_for_status()


def _ratios(cells: dict[str, Cell]) -> str:
    ratios = f"memory/plain {cells['memory'].cpu_ms / cells['plain'].cpu_ms:4.2f}"
    if "memory-base" in cells:
        base = cells["memory-base"].cpu_ms
        ratios += f"  memory-base/plain {base / cells['plain'].cpu_ms:4.2f}"
        ratios += f"  memory/memory-base {cells['memory'].cpu_ms / base:4.2f}"
    return ratios


if __name__ == "__main__":
    main()
