"""Start the real gateway on a free port for end-to-end tests, as an operator would:
``manage.py serve`` (migrations, config check, then daphne)."""

import os
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx

PROJECT_DIR = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class GatewayServer:
    """One daphne process serving ``config_path`` with the database at ``database_url``.

    Several servers may share one config file (``config_path``, written only when
    ``config_text`` is given) and one database, as several production processes do.
    """

    def __init__(
        self,
        workdir: Path,
        config_text: str | None,
        database_url: str | None = None,
        config_path: Path | None = None,
    ) -> None:
        self.workdir = workdir
        self.config_path = config_path or workdir / "gateway.yaml"
        if config_text is not None:
            self.config_path.write_text(config_text)
        self.database_url = database_url or f"sqlite:///{workdir / 'gateway.sqlite3'}"
        self.log_path = workdir / "gateway.log"  # stderr: the JSON log lines
        self.stdout_path = workdir / "gateway.out"
        self.port = 0
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def env(self) -> dict[str, str]:
        return {
            **os.environ,
            "GATEWAY_CONFIG": str(self.config_path),
            "DATABASE_URL": self.database_url,
            "DJANGO_SETTINGS_MODULE": "gateway.settings",
            "PYTHONPATH": str(PROJECT_DIR),
        }

    def start(self) -> "GatewayServer":
        self.port = free_port()
        serve = [sys.executable, str(PROJECT_DIR / "manage.py"), "serve"]
        with self.log_path.open("ab") as log, self.stdout_path.open("ab") as out:
            self._process = subprocess.Popen(
                [*serve, "--host", "127.0.0.1", "--port", str(self.port)],
                cwd=self.workdir,
                env=self.env,
                stdout=out,
                stderr=log,
            )
        self._wait_until_healthy()
        return self

    def _wait_until_healthy(self) -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            if self._process is not None and self._process.poll() is not None:
                raise RuntimeError(f"gateway exited early:\n{self.log()}")
            try:
                if httpx.get(f"{self.url}/healthz", timeout=1).status_code == 200:
                    return
            except httpx.HTTPError:
                time.sleep(0.1)
        raise RuntimeError(f"gateway did not become healthy:\n{self.log()}")

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self) -> None:
        """``kill -9``: the process gets no chance to finish what it is doing."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    def stop(self) -> None:
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            try:
                self._process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._process.kill()
                self._process.wait()
