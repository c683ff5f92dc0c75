"""The gateway beside its peers, as the published gateway boards measure them: Portkey's
gateway and, with ``--litellm``, LiteLLM's proxy, with the bare relay as the yardstick.

Starts on loopback: the fake OpenAI upstream (``direct``), the bare relay
(``bench.harness.relay``), the gateway with the production config of
``bench.floor.production`` (a minted API key per user, a price, two deployments, the
trace store, 40 history messages replayed; one process), and the peers, one process each:

- ``portkey``: ``@portkey-ai/gateway`` (the version ``bench/peers/package.json`` pins) on
  node, ``--headless``, stateless: every request names the provider and the fake's URL in
  its ``x-portkey-provider`` and ``x-portkey-custom-host`` headers. Installed on the first
  run with ``npm ci --prefix bench/peers``. Its streams fail on node 20 (HTTP 500): one
  streamed request is tried first, and when it fails its stream cells are not measured;
- ``litellm`` (``--litellm``): LiteLLM's proxy (``--litellm-workers``, one by default)
  with a ``model_list`` naming the fake (``openai/m`` at its ``api_base``) and a master
  key; installed on the first run into ``.venv-litellm`` from the hash-locked
  ``bench/peers/requirements-litellm.txt``. It takes about a minute to install and a
  few hundred MB of memory, hence the option.

A peer that cannot be installed or started is skipped, with the reason in the report.

Slices of all targets interleave (``bench.harness.load.interleave``), non-streamed and
streamed, at 1, 16 and 64 clients. The report: each cell's figures; the latency each
target adds at one client over calling the fake directly (p50 and p99, and the added time
to the first byte of a stream); the server CPU per request of each cell and the resident
memory of each target's processes after the run, each against the relay's.

    .venv/bin/python -m bench.floor.peers [--quick] [--rounds 3] [--seconds 3] [--litellm]
        [--litellm-workers 1] [--node /usr/bin/node] [--warm-up 2000]
"""

import argparse
import asyncio
import hashlib
import json
import os
import secrets
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from contextlib import AbstractContextManager, ExitStack, contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import httpx

from bench.floor import production
from bench.floor.memory import server_rss_mb
from bench.harness.load import (
    STORED_TURNS,
    Cell,
    Target,
    body,
    interleave,
    percentile,
    prefill,
    run_slice,
    say,
)
from bench.harness.processes import floor, mint_keys, start_process, stop_process
from tests.server import PROJECT_DIR, GatewayServer, free_port

CLIENTS = (1, 16, 64)
PEERS = PROJECT_DIR / "bench" / "peers"
PORTKEY = "@portkey-ai/gateway"
LITELLM_LOCK = PEERS / "requirements-litellm.txt"
LITELLM_VENV = PROJECT_DIR / ".venv-litellm"

Results = dict[tuple[str, bool, int], Cell]


@dataclass(frozen=True)
class Peer:
    target: Target
    about: str  # what runs: its version, and why its streams are not measured if they are not


class Skipped(Exception):
    """A peer that cannot run here: the message says why."""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--quick", action="store_true", help="one round of 1.5 s slices")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0, help="length of one slice")
    parser.add_argument(
        "--warm-up", type=int, default=2000, help="requests each server gets first (--quick: 500)"
    )
    parser.add_argument("--litellm", action="store_true", help="LiteLLM's proxy too")
    parser.add_argument("--litellm-workers", type=int, default=1)
    parser.add_argument("--node", default=shutil.which("node"), help="the node that runs Portkey")
    options = parser.parse_args()
    rounds, seconds = (1, 1.5) if options.quick else (options.rounds, options.seconds)
    warm = 500 if options.quick else options.warm_up
    about: list[str] = []
    with tempfile.TemporaryDirectory() as directory, floor() as base, ExitStack() as stack:
        workdir = Path(directory)
        gateway = stack.enter_context(production_gateway(workdir, base.upstream))
        targets = [base.direct, base.relay, gateway]
        # Started on entering: a peer's context manager installs it, then starts it.
        peers: dict[str, AbstractContextManager[Peer]] = {
            "portkey": portkey(options.node, base.upstream, workdir)
        }
        if options.litellm:
            peers["litellm"] = litellm(base.upstream, workdir, options.litellm_workers)
        for name, peer in peers.items():
            try:
                started = stack.enter_context(peer)
            except Skipped as error:
                about.append(f"{name}: not measured: {error}")
                say(about[-1])
                continue
            targets.append(started.target)
            about.append(started.about)
        say(f"storing {STORED_TURNS} turns for each of {max(CLIENTS)} users")
        asyncio.run(prefill(gateway, max(CLIENTS)))
        say(f"warming each server up with {warm} requests")
        asyncio.run(warm_up(targets[1:], warm))
        results = asyncio.run(interleave(targets, CLIENTS, rounds, seconds))
        memory = {target.name: sum(server_rss_mb(target.pid).values()) for target in targets}
    print("\n" + "\n".join(about))
    report(targets, results, memory, rounds, seconds)


async def warm_up(targets: list[Target], requests: int) -> None:
    """``requests`` non-streamed requests to each target, from 16 clients: node optimizes
    Portkey's hot code only after many calls (on a busy machine here its CPU per request
    fell from 4.2 to 2.3 ms over its first 2,000 requests)."""
    for target in targets:
        await run_slice(target, 16, False, float("inf"), Cell(), requests)


@contextmanager
def production_gateway(workdir: Path, upstream: str) -> Iterator[Target]:
    """The gateway with the production config, one process, a minted key per user."""
    directory = workdir / "gateway"
    directory.mkdir()
    server = GatewayServer(directory, production.config(upstream, "production")).start()
    try:
        say(f"minting an API key for each of {max(CLIENTS)} users")
        keys = mint_keys(server, [f"bench-user-{user}" for user in range(max(CLIENTS))])
        yield Target("gateway", f"{server.url}/v1", server.pid, keys)
    finally:
        server.stop()


@contextmanager
def portkey(node: str | None, upstream: str, workdir: Path) -> Iterator[Peer]:
    """Portkey's gateway on node, stateless, calling the fake through its custom host;
    its streams measured only if a streamed request succeeds (they fail on node 20)."""
    found = shutil.which(node) if node else None
    if found is None:
        raise Skipped(f"no node at {node!r} (--node)" if node else "no node on PATH (--node)")
    node = found
    start_script = install_portkey()
    port = free_port()
    command = [node, str(start_script), f"--port={port}", "--headless"]
    process = start(command, {**os.environ, "NODE_ENV": "production"}, port, workdir, "portkey")
    try:
        headers = {
            "x-portkey-provider": "openai",
            "x-portkey-custom-host": upstream,
            "Authorization": "Bearer sk-bench",
        }
        target = Target("portkey", f"http://127.0.0.1:{port}/v1", process.pid, sends=headers)
        version = subprocess.run([node, "--version"], capture_output=True, text=True).stdout
        about = f"portkey: {PORTKEY} {pinned_portkey()} on node {version.strip()}"
        failure = stream_failure(target)
        if failure is not None:
            target = replace(target, streams=False)
            about += f"; streams not measured: {failure}"
        yield Peer(target, about)
    finally:
        stop_process(process)


def install_portkey() -> Path:
    """The start script of the pinned Portkey gateway, installed first (``npm ci``, from
    ``bench/peers/package-lock.json``) when it is not there or not the pinned version."""
    wanted = pinned_portkey()
    package = PEERS / "node_modules" / PORTKEY / "package.json"
    if not package.exists() or json.loads(package.read_text())["version"] != wanted:
        npm = shutil.which("npm")
        if npm is None:
            raise Skipped("npm is missing, so Portkey's gateway cannot be installed")
        say(f"installing {PORTKEY} {wanted} into bench/peers/node_modules")
        # The gateway ships built: no install script of its dependencies needs to run.
        command = [npm, "ci", "--prefix", str(PEERS), "--ignore-scripts", "--no-audit"]
        done = subprocess.run([*command, "--no-fund"], capture_output=True, text=True)
        if done.returncode != 0:
            raise Skipped(f"npm ci failed: {done.stderr.strip()[-500:]}")
    start_script: str = json.loads(package.read_text())["bin"]
    return package.parent / start_script


def pinned_portkey() -> str:
    version: str = json.loads((PEERS / "package.json").read_text())["dependencies"][PORTKEY]
    return version


def stream_failure(target: Target) -> str | None:
    """Why a streamed request to ``target`` fails, or None when it is answered."""
    request = body(0, 0, stream=True)
    try:
        with httpx.stream(
            "POST", f"{target.url}/chat/completions", json=request, headers=target.headers(0)
        ) as response:
            text = response.read().decode(errors="replace")
    except httpx.HTTPError as error:
        return f"a streamed request failed: {error!r}"
    if response.status_code != 200 or "[DONE]" not in text:
        return f"a streamed request answered {response.status_code} {text[:200]!r}"
    return None


@contextmanager
def litellm(upstream: str, workdir: Path, workers: int) -> Iterator[Peer]:
    """LiteLLM's proxy with the fake as its one model, ``bench``, and a master key."""
    executable = install_litellm()
    master_key = f"sk-bench-{secrets.token_hex(16)}"
    config = workdir / "litellm.yaml"
    model = {"model": "openai/m", "api_base": upstream, "api_key": "sk-bench"}
    settings = {
        "model_list": [{"model_name": "bench", "litellm_params": model}],
        "litellm_settings": {"drop_params": True, "telemetry": False},
        "general_settings": {"master_key": master_key},
    }
    config.write_text(json.dumps(settings))  # YAML takes JSON
    port = free_port()
    command = [str(executable), "--config", str(config), "--host", "127.0.0.1"]
    command += ["--port", str(port), "--num_workers", str(workers)]
    # Its price table as installed, not fetched; no .env read from the working directory.
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", "LITELLM_MODE": "PRODUCTION"}
    process = start(command, env, port, workdir, "litellm", wait=180)
    try:
        sends = {"Authorization": f"Bearer {master_key}"}
        target = Target("litellm", f"http://127.0.0.1:{port}/v1", process.pid, sends=sends)
        yield Peer(target, f"litellm: {litellm_version()}, {workers} worker(s)")
    finally:
        stop_process(process)


def install_litellm() -> Path:
    """The ``litellm`` command of ``.venv-litellm``, installed first (hash-checked, from
    ``bench/peers/requirements-litellm.txt``) when that lock changed since the last install."""
    python = LITELLM_VENV / "bin" / "python"
    stamp = LITELLM_VENV / ".installed-requirements-litellm"
    digest = hashlib.sha256(LITELLM_LOCK.read_bytes()).hexdigest()
    if python.exists() and stamp.exists() and stamp.read_text() == digest:
        return LITELLM_VENV / "bin" / "litellm"
    say(f"installing LiteLLM into {LITELLM_VENV.name} (about a minute)")
    steps = [[sys.executable, "-m", "venv", str(LITELLM_VENV)]] if not python.exists() else []
    pip = [str(python), "-m", "pip", "install", "--quiet", "--require-hashes", "-r"]
    steps += [[*pip, str(PROJECT_DIR / "requirements-pip.txt")], [*pip, str(LITELLM_LOCK)]]
    for step in steps:
        done = subprocess.run(step, capture_output=True, text=True)
        if done.returncode != 0:
            raise Skipped(f"installing LiteLLM failed: {done.stderr.strip()[-500:]}")
    stamp.write_text(digest)
    return LITELLM_VENV / "bin" / "litellm"


def litellm_version() -> str:
    python = str(LITELLM_VENV / "bin" / "python")
    code = "from importlib.metadata import version; print(version('litellm'))"
    done = subprocess.run([python, "-c", code], capture_output=True, text=True)
    return f"LiteLLM {done.stdout.strip()}"


def start(
    command: list[str],
    env: dict[str, str],
    port: int,
    workdir: Path,
    name: str,
    wait: float = 30,
) -> subprocess.Popen[bytes]:
    """A peer's process, answering on ``port``; its output in ``workdir``/``name``.log."""
    log = workdir / f"{name}.log"
    try:
        return start_process(command, env, port, wait=wait, log=log)
    except RuntimeError as error:
        raise Skipped(f"{error}; its output ended: {log.read_text()[-500:]!r}") from None


def report(
    targets: list[Target],
    results: Results,
    memory: dict[str, float],
    rounds: int,
    seconds: float,
) -> None:
    print(
        f"\n{rounds} round(s) of {seconds:g} s slices per target and cell; latencies in ms; "
        "CPU = server CPU ms/request"
    )
    print(f"{'target':8} {'mode':6} {'clients':>7} {'req/s':>8} {'p50':>7} {'p99':>7}", end="")
    print(f" {'CPU':>6} {'TTFB p50':>8} {'errors':>6}")
    for stream in (False, True):
        for clients in CLIENTS:
            for target in targets:
                cell = results[(target.name, stream, clients)]
                mode = "stream" if stream else "json"
                print(f"{target.name:8} {mode:6} {clients:7d} ", end="")
                if stream and not target.streams:
                    print("not measured")
                    continue
                print(
                    f"{cell.rate:8.1f} {percentile(cell.latencies, 0.5):7.2f} "
                    f"{percentile(cell.latencies, 0.99):7.2f} {cell.cpu_ms:6.2f} "
                    f"{percentile(cell.first_bytes, 0.5):8.2f} {cell.errors:6d}"
                )
    servers = [target for target in targets if target.name != "direct"]
    report_added_latency(servers, results)
    report_cpu(servers, results)
    relay = memory["relay"]
    print("\nresident memory after the run, MB (all of a target's processes; x the relay's):")
    print(
        "  "
        + "  ".join(
            f"{t.name} {memory[t.name]:.0f} ({memory[t.name] / relay:.2f}x)" for t in servers
        )
    )


def report_added_latency(servers: list[Target], results: Results) -> None:
    """What each target adds at one client over calling the fake directly, as the
    published gateway boards give it: p50 and p99 of the whole request, and the p50 of
    the time to a stream's first byte."""

    def at(name: str, stream: bool, fraction: float, first_byte: bool = False) -> float:
        cell = results[(name, stream, 1)]
        return percentile(cell.first_bytes if first_byte else cell.latencies, fraction)

    print("\nadded latency over calling the upstream directly, 1 client (ms):")
    for target in servers:
        p50, p99 = (at(target.name, False, q) - at("direct", False, q) for q in (0.5, 0.99))
        line = f"  {target.name:8} json p50 {p50:+7.2f}  p99 {p99:+7.2f}   "
        if target.streams:
            first = at(target.name, True, 0.5, True) - at("direct", True, 0.5, True)
            line += f"stream first byte p50 {first:+7.2f}"
        else:
            line += "stream not measured"
        print(line)


def report_cpu(servers: list[Target], results: Results) -> None:
    print("\nserver CPU per request, ms (x the relay's in the same cell):")
    columns = [(stream, clients) for stream in (False, True) for clients in CLIENTS]
    heads = "".join(f"{('stream' if s else 'json') + f' c={c}':>15}" for s, c in columns)
    print(f"  {'':8}{heads}")
    for target in servers:
        line = f"  {target.name:8}"
        for stream, clients in columns:
            if stream and not target.streams:
                line += f"{'-':>15}"
                continue
            cpu = results[(target.name, stream, clients)].cpu_ms
            relay = results[("relay", stream, clients)].cpu_ms
            line += f"{f'{cpu:.2f} ({cpu / relay:.2f}x)':>15}"
        print(line)


if __name__ == "__main__":
    main()
