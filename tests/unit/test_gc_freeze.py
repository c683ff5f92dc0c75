"""What a worker builds as it starts is frozen out of garbage collection: a full
collection walks only what requests left, not the whole of Django and the config."""

import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
COUNTS = """
import gc, os
os.environ["DJANGO_SETTINGS_MODULE"] = "gateway.settings"
import gateway.asgi
print(gc.get_freeze_count(), len(gc.get_objects()))
"""


def test_the_objects_start_up_built_are_frozen_and_collections_walk_only_the_rest(
    tmp_path: Path,
) -> None:
    (tmp_path / "gateway.yaml").write_text(
        "providers: {openai: {api_key: sk-test, base_url: 'http://127.0.0.1:9/v1'}}\n"
        "agents: [{name: a, provider: openai, model: m}]\n"
    )
    environment = {**os.environ, "PYTHONPATH": str(ROOT), "GATEWAY_CONFIG": "gateway.yaml"}
    run = subprocess.run(
        [sys.executable, "-c", COUNTS],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    frozen, tracked = map(int, run.stdout.split())

    assert frozen > 10 * tracked
