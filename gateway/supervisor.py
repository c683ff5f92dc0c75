"""Several server processes on one listening socket, and their supervision.

Each worker is its own daphne process that adopts the socket the parent bound (the
kernel hands each new connection to one of them). The parent only watches: SIGTERM or
SIGINT stops every worker, and a worker that dies on its own stops the others and makes
the parent exit with 1, so the service manager (systemd, Docker, Kubernetes) restarts the
whole set and nothing runs on with fewer cores than asked without anyone noticing.
"""

import signal
import socket
import subprocess
import sys
import time
from types import FrameType

STOP_GRACE_SECONDS = 15.0  # a worker gets this long after SIGTERM before SIGKILL
POLL_SECONDS = 0.2


class Supervisor:
    def __init__(self, command: list[str], workers: int, listener: socket.socket) -> None:
        self.command = command
        self.workers = workers
        self.listener = listener
        self._stopping = False
        self._children: list[subprocess.Popen[bytes]] = []

    def run(self) -> int:
        """Start the workers and wait; the exit code for the parent (0: asked to stop)."""
        signal.signal(signal.SIGTERM, self._stop)
        signal.signal(signal.SIGINT, self._stop)
        fd = self.listener.fileno()
        self._children = [
            subprocess.Popen(self.command, pass_fds=(fd,)) for _ in range(self.workers)
        ]
        died = self._wait_for_stop_or_death()
        if died is not None:
            print(
                f"worker {died.pid} exited with status {died.returncode}: stopping the others",
                file=sys.stderr,
                flush=True,
            )
        self._stop_all()
        return 0 if died is None else 1

    def _wait_for_stop_or_death(self) -> subprocess.Popen[bytes] | None:
        while not self._stopping:
            for child in self._children:
                if child.poll() is not None:
                    return child
            time.sleep(POLL_SECONDS)
        return None

    def _stop(self, signum: int, frame: FrameType | None) -> None:
        self._stopping = True

    def _stop_all(self) -> None:
        # The socket closes once no worker holds it either: new connections are refused
        # rather than left waiting for a worker that will not take them.
        self.listener.close()
        for child in self._children:
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_SECONDS
        for child in self._children:
            try:
                child.wait(timeout=max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                child.kill()
                child.wait()
