"""What the optional groups of tests need from the machine, probed once per session.

Each marker names a group; when its service is missing, its tests are skipped with the
reason on one line (or the run stops, when ``GATEWAY_TESTS_REQUIRE_SERVICES=1``: CI has
every service, and a skip there would hide a broken one).
"""

import socket
from collections.abc import Callable
from functools import cache
from pathlib import Path

import psycopg

PROJECT_DIR = Path(__file__).resolve().parents[1]
POSTGRES_ADMIN_URL = "postgresql://postgres@127.0.0.1:5432/postgres"
REDIS_ADDRESS = ("127.0.0.1", 6379)
CHROMIUM = Path("/usr/bin/chromium")
CLIENTS_PYTHON = PROJECT_DIR / ".venv-clients" / "bin" / "python"
NODE_CLIENTS = PROJECT_DIR / "tests" / "clients" / "node_modules" / ".bin"
CODING_AGENTS = ("claude", "codex", "gemini")


def _postgres() -> str | None:
    try:
        with psycopg.connect(POSTGRES_ADMIN_URL, connect_timeout=2):
            return None
    except psycopg.Error as error:
        return f"no PostgreSQL at 127.0.0.1:5432 (trust auth, user postgres): {error}".strip()


def _redis() -> str | None:
    try:
        with socket.create_connection(REDIS_ADDRESS, timeout=2) as connection:
            connection.sendall(b"PING\r\n")
            if connection.recv(16).startswith(b"+PONG"):
                return None
    except OSError as error:
        return f"no Redis at 127.0.0.1:6379: {error}"
    return "no Redis at 127.0.0.1:6379: it did not answer PING"


def _browser() -> str | None:
    return None if CHROMIUM.exists() else f"no Chromium at {CHROMIUM} (Debian package chromium)"


def _clients() -> str | None:
    if CLIENTS_PYTHON.exists():
        return None
    return "no .venv-clients (scripts/setup requirements-clients.txt .venv-clients makes it)"


def _node() -> str | None:
    absent = [name for name in CODING_AGENTS if not (NODE_CLIENTS / name).exists()]
    if not absent:
        return None
    return (
        f"no {', '.join(absent)} in {NODE_CLIENTS.relative_to(PROJECT_DIR)} (Node.js and npm "
        "are needed: scripts/test installs tests/clients/package.json)"
    )


PROBES: dict[str, Callable[[], str | None]] = {
    "postgres": _postgres,
    "redis": _redis,
    "browser": _browser,
    "clients": _clients,
    "node": _node,
}


@cache
def missing(marker: str) -> str | None:
    """Why the service of ``marker`` cannot be used here, or None when it can."""
    return PROBES[marker]()
