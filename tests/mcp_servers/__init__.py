"""Real MCP servers for the tests, written with the SDK."""

import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

GREETER = Path(__file__).resolve().parent / "greeter.py"


def start_http_greeter(port: int, transport: str = "http") -> subprocess.Popen[bytes]:
    """The greeter serving Streamable HTTP on 127.0.0.1:``port``/mcp (or, ``transport``
    ``sse``, SSE on /sse), once it listens."""
    process = subprocess.Popen(
        [sys.executable, str(GREETER), transport, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return process
        time.sleep(0.1)
    process.kill()
    raise RuntimeError(f"nothing listens on {port}")


@contextmanager
def http_greeter(port: int, transport: str = "http") -> Iterator[int]:
    """The greeter on ``port`` for the block (``port``), stopped after it."""
    process = start_http_greeter(port, transport)
    try:
        yield port
    finally:
        process.terminate()
        process.wait()
