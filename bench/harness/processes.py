"""The processes a benchmark measures: the fake OpenAI upstream, the bare relay
(``bench.harness.relay``: Django + daphne + httpx, nothing else) and gateways, all on
loopback, stopped when the benchmark ends."""

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from bench.harness.load import Target
from bench.harness.workload import bench_config
from tests.server import PROJECT_DIR, GatewayServer, free_port


@dataclass(frozen=True)
class Floor:
    """The fake upstream and the relay in front of it."""

    upstream: str  # the fake's base URL
    direct: Target  # the fake itself
    relay: Target


@contextmanager
def floor(fake_options: Sequence[str] = ()) -> Iterator[Floor]:
    """The fake OpenAI upstream (with ``fake_options``, e.g. ``--stream-events 40``) and
    the bare relay, each in its own process."""
    env = {**os.environ, "PYTHONPATH": str(PROJECT_DIR)}
    fake_port, relay_port = free_port(), free_port()
    upstream = f"http://127.0.0.1:{fake_port}/v1"
    python = sys.executable
    fake_command = [python, "-m", "tests.fakes.openai_upstream", "--port", str(fake_port)]
    fake_command += fake_options
    fake = start_process(fake_command, env, fake_port)
    try:
        relay_command = [python, "-m", "daphne", "-v", "0", "-p", str(relay_port)]
        relay = start_process(
            [*relay_command, "bench.harness.relay:application"],
            {**env, "RELAY_UPSTREAM": upstream},
            relay_port,
        )
        try:
            yield Floor(
                upstream,
                Target("direct", upstream, fake.pid),
                Target("relay", f"http://127.0.0.1:{relay_port}/v1", relay.pid),
            )
        finally:
            stop_process(relay)
    finally:
        stop_process(fake)


@contextmanager
def gateways(
    workdir: Path, upstream: str, extras: dict[str, str]
) -> Iterator[dict[str, GatewayServer]]:
    """A gateway for each name, on its own SQLite database, with the bench config plus
    that name's extra YAML."""
    servers: dict[str, GatewayServer] = {}
    try:
        for name, extra in extras.items():
            directory = workdir / name
            directory.mkdir()
            servers[name] = GatewayServer(directory, bench_config(upstream, extra)).start()
        yield servers
    finally:
        for server in servers.values():
            server.stop()


def start_process(
    command: list[str],
    env: dict[str, str],
    port: int,
    wait: float = 30,
    log: Path | None = None,
) -> subprocess.Popen[bytes]:
    """``command``, once it answers on ``port`` (within ``wait`` seconds); its output goes
    to ``log`` (else nowhere)."""
    with open(log or os.devnull, "wb") as output:
        process = subprocess.Popen(
            command, env=env, cwd=PROJECT_DIR, stdout=output, stderr=subprocess.STDOUT
        )
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline and process.poll() is None:
        try:
            httpx.get(f"http://127.0.0.1:{port}/", timeout=1)
            return process
        except httpx.TransportError:
            time.sleep(0.1)
    process.kill()
    process.wait()
    raise RuntimeError(f"{command} did not start listening on port {port}")


def stop_process(process: subprocess.Popen[bytes]) -> None:
    process.terminate()
    process.wait(timeout=10)


def mint_key(server: GatewayServer, user: str, *limits: str) -> str:
    """A new API key of ``user`` on ``server``'s database (``manage.py create_api_key`` of
    the server's own checkout)."""
    command = [
        server.python, str(server.project_dir / "manage.py"), "create_api_key", "--user", user,
        "--name", "bench", *limits,
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, env=server.env, check=True)
    return done.stdout.strip()


def mint_keys(server: GatewayServer, users: Sequence[str]) -> tuple[str, ...]:
    """A new API key for each of ``users``, in order, in one process (``manage.py shell``
    of the server's checkout): a Django start per key, as ``mint_key`` has, takes seconds
    on a busy machine."""
    code = (
        "from inference.money.keys import KeySpec, create_key\n"
        f"for user in {list(users)!r}:\n"
        "    print(create_key(KeySpec(name='bench', user=user))[1])\n"
    )
    command = [server.python, str(server.project_dir / "manage.py"), "shell", "-v", "0", "-c"]
    done = subprocess.run(
        [*command, code], capture_output=True, text=True, env=server.env, check=True
    )
    keys = tuple(done.stdout.split())
    if len(keys) != len(users):
        raise RuntimeError(f"minted {len(keys)} keys for {len(users)} users: {done.stdout!r}")
    return keys
