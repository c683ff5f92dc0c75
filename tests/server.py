"""Start the real gateway on a free port for end-to-end tests, as an operator would:
``manage.py serve`` (migrations, config check, then daphne)."""

import contextlib
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import httpx
import psutil
from prometheus_client.parser import text_string_to_metric_families

PROJECT_DIR = Path(__file__).resolve().parent.parent


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class GatewayServer:
    """Daphne serving ``config_path`` with the database at ``database_url``: one process,
    or ``workers`` processes on one port under ``serve --workers``.

    Several servers may share one config file (``config_path``, written only when
    ``config_text`` is given) and one database, as several production processes do.
    """

    def __init__(
        self,
        workdir: Path,
        config_text: str | None,
        database_url: str | None = None,
        config_path: Path | None = None,
        workers: int = 1,
        extra_env: dict[str, str] | None = None,
        python: str | None = None,
        project_dir: Path = PROJECT_DIR,
    ) -> None:
        """``python``: the interpreter that serves (another virtualenv's), else this one;
        ``project_dir``: the checkout that serves (another commit's, for a benchmark that
        sets two side by side), else this one."""
        self.python = python or sys.executable
        self.project_dir = project_dir
        self.workers = workers
        self.extra_env = extra_env or {}
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
            "PYTHONPATH": str(self.project_dir),
            **self.extra_env,
        }

    def start(self, port: int | None = None) -> "GatewayServer":
        """``port``: one the test chose (for a config that names the gateway's own URL)."""
        self.port = port or free_port()
        serve = [self.python, str(self.project_dir / "manage.py"), "serve", "--host", "127.0.0.1"]
        serve += ["--port", str(self.port), "--workers", str(self.workers)]
        with self.log_path.open("ab") as log, self.stdout_path.open("ab") as out:
            self._process = subprocess.Popen(
                serve,
                cwd=self.workdir,
                env=self.env,
                stdout=out,
                stderr=log,
            )
        self._wait_until_healthy()
        return self

    def _wait_until_healthy(self) -> None:
        deadline = time.monotonic() + 90  # a start on a machine busy with other suites
        # One client for all the polls: each new one loads the CA bundle again (about 30 ms
        # of CPU, taken from the starting gateway on a busy machine).
        with httpx.Client(timeout=1) as client:
            while time.monotonic() < deadline:
                if self._process is not None and self._process.poll() is not None:
                    raise RuntimeError(f"gateway exited early:\n{self.log()}")
                try:
                    if client.get(f"{self.url}/healthz").status_code == 200:
                        return
                except httpx.HTTPError:
                    time.sleep(0.1)
        self.stop()  # nothing is left running behind a failed start
        raise RuntimeError(f"gateway did not become healthy:\n{self.log()}")

    @property
    def pid(self) -> int:
        """The server's process: daphne itself, or the supervisor of the workers."""
        assert self._process is not None
        return self._process.pid

    def worker_pids(self) -> list[int]:
        """The worker processes under ``--workers`` (the supervisor's daphne children)."""
        return sorted(child.pid for child in psutil.Process(self.pid).children())

    @contextmanager
    def only(self, worker: int) -> Iterator[None]:
        """Requests made meanwhile reach ``worker``: the other workers are paused
        (SIGSTOP). The workers accept on one shared socket, so a paused one takes no
        connection, whatever the kernel would have chosen."""
        others = [pid for pid in self.worker_pids() if pid != worker]
        for pid in others:
            os.kill(pid, signal.SIGSTOP)
        try:
            yield
        finally:
            for pid in others:
                os.kill(pid, signal.SIGCONT)

    def wait(self, timeout: float) -> int:
        """The exit code of the server process, once it exits on its own."""
        assert self._process is not None
        return self._process.wait(timeout=timeout)

    def metric(self, name: str, **labels: str) -> float:
        """The value of one sample of ``/metrics`` (0 while it has not appeared)."""
        response = httpx.get(f"{self.url}/metrics", timeout=10)
        response.raise_for_status()
        for family in text_string_to_metric_families(response.text):
            for sample in family.samples:
                if sample.name == name and labels.items() <= sample.labels.items():
                    return sample.value
        return 0.0

    def log(self) -> str:
        return self.log_path.read_text(errors="replace") if self.log_path.exists() else ""

    def kill(self) -> None:
        """``kill -9``: the process gets no chance to finish what it is doing."""
        if self._process is not None and self._process.poll() is None:
            self._process.kill()
            self._process.wait()

    def stop(self) -> None:
        """SIGTERM, as a service manager stops it; SIGKILL, workers included, to a server
        still running after the 15 s a stopping worker may take, and some margin."""
        if self._process is not None and self._process.poll() is None:
            workers = psutil.Process(self._process.pid).children()
            self._process.terminate()
            try:
                self._process.wait(timeout=25)
            except subprocess.TimeoutExpired:
                for worker in workers:
                    with contextlib.suppress(psutil.NoSuchProcess):
                        worker.kill()
                self._process.kill()
                self._process.wait()
