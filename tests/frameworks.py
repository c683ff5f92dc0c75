"""Running a client script of tests/clients in its own virtualenv (.venv-clients, set up
by scripts/test): the OpenAI Agents SDK's package is named "agents", like the
gateway's config app, so the frameworks cannot share the gateway's environment."""

import json
import subprocess
from pathlib import Path
from typing import Any

from tests.server import PROJECT_DIR, GatewayServer

CLIENTS = PROJECT_DIR / "tests" / "clients"
PYTHON = PROJECT_DIR / ".venv-clients" / "bin" / "python"


def run_client(script: str, gateway: GatewayServer, model: str, user: str) -> dict[str, Any]:
    """The JSON the script prints last, after it ran against ``gateway`` as ``user``."""
    result = subprocess.run(
        [str(PYTHON), str(CLIENTS / script), f"{gateway.url}/v1", model, user],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=CLIENTS,
        env={"PATH": "/usr/bin:/bin", "HOME": str(Path.home())},
    )
    assert result.returncode == 0, result.stderr[-3000:]
    return json.loads(result.stdout.strip().splitlines()[-1])
