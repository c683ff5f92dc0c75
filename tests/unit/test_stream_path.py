"""A streamed event passes few of our generators, and one upstream read that carries
several events goes to the client as one send (``bench.features.stream_path``: the ASGI
application in a process of its own, the fake upstream writing four events at a time)."""

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
MOST_LAYERS = 4  # from the upstream read to the ASGI send (ten before the pipeline was one)


def test_every_dialect_streams_through_few_layers_and_one_send_per_read(tmp_path: Path) -> None:
    run = subprocess.run(
        [sys.executable, "-m", "bench.features.stream_path", "--per-write", "4", "--json"],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=120,
        check=True,
    )
    results = json.loads(run.stdout.strip().splitlines()[-1])

    assert set(results) == {"chat", "responses", "messages", "gemini"}
    for dialect, result in results.items():
        assert 0 < result["layers"] <= MOST_LAYERS, (dialect, result["generators"])
        # 16 events (the role, 12 words, the finish, the usage, [DONE]) in 4 writes; the
        # turn's own ending (its finish, total usage and the stream's end) is one send more.
        assert result["reads"] <= 4
        assert result["sends"] <= result["reads"] + 1, (dialect, result)
