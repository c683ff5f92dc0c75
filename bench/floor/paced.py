"""Token-paced streams: the CPU the gateway adds to each event of a stream, over the bare
relay's, when the upstream sends events as a model makes tokens (issue 46).

Starts, on loopback, two fake OpenAI upstreams, each with the bare relay
(``bench.harness.relay``) in front of it:

- ``whole``: today's fake, whose short streamed reply (10 events) is written in one burst,
  so that a read of the server often carries several events;
- ``paced``: the fake with ``--stream-events 40 --event-gap-ms 5``: every streamed reply
  is 40 SSE events, each in its own write, 5 ms apart, so that every event is a read of
  its own and a trip through the server's per-event path.

and, for each workload, the gateway with the production config of
``bench.floor.production`` (history replay of 20 stored turns per user, prices, API keys,
the trace store, two deployments). ``--gateway-dir DIR`` (repeatable) adds the gateway of
another checkout beside this one's (``git worktree add /tmp/main main``), so that two
commits are measured in one run. The two gateways of one checkout share its database.

Streamed requests only, at 1 and 16 clients, slices of all targets interleaved. It prints
the server CPU per request of each target, each gateway's ratio to its relay, and the CPU
each gateway adds per event over the relay's ((gateway - relay) / events); with several
gateways, last, this checkout's added CPU per event against each other's (issue 46's
target: at most half of what main adds).

    .venv/bin/python -m bench.floor.paced [--quick] [--rounds 2] [--seconds 2]
        [--events 40] [--gap-ms 5] [--gateway-dir DIR ...]
"""

import argparse
import asyncio
import subprocess
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

from bench.floor.production import config
from bench.harness.load import Cell, Target, prefill, run_slice, say
from bench.harness.processes import Floor, floor, mint_key
from tests.server import PROJECT_DIR, GatewayServer

CLIENTS = (1, 16)
HALF = 0.5  # this checkout's added CPU per event, against another's (main's)
# Today's fake answers "You said: question N of a benchmark": six words, and the role,
# the finish, the usage and [DONE].
WHOLE_EVENTS = 10


@dataclass(frozen=True)
class Checkout:
    name: str  # gateway, gateway-2, ...
    directory: Path

    def describe(self) -> str:
        def git(*arguments: str) -> str:
            command = ["git", "-C", str(self.directory), *arguments]
            done = subprocess.run(command, capture_output=True, text=True, check=False)
            return done.stdout.strip()

        commit = git("rev-parse", "--short", "HEAD") or "?"
        changed = " with uncommitted changes" if git("status", "--porcelain", "-uno") else ""
        return f"{self.name} = {self.directory} at {commit}{changed}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seconds", type=float, default=2.0, help="length of one slice")
    parser.add_argument("--quick", action="store_true", help="one round of 1.5 s slices")
    parser.add_argument("--events", type=int, default=40, help="events of a paced stream")
    parser.add_argument("--gap-ms", type=float, default=5.0, help="between two paced events")
    parser.add_argument(
        "--gateway-dir",
        type=Path,
        action="append",
        default=[],
        help="another checkout whose gateway to measure beside this one's (repeatable)",
    )
    options = parser.parse_args()
    rounds, seconds = (1, 1.5) if options.quick else (options.rounds, options.seconds)
    checkouts = [Checkout("gateway", PROJECT_DIR)] + [
        Checkout(f"gateway-{number}", directory.resolve())
        for number, directory in enumerate(options.gateway_dir, start=2)
    ]
    events = {"whole": WHOLE_EVENTS, "paced": options.events}
    paced_options = ["--stream-events", str(options.events), "--event-gap-ms", str(options.gap_ms)]
    servers: list[GatewayServer] = []
    with (
        tempfile.TemporaryDirectory() as workdir,
        floor() as whole,
        floor(paced_options) as paced,
    ):
        try:
            targets = start(Path(workdir), {"whole": whole, "paced": paced}, checkouts, servers)
            results = asyncio.run(measure(targets, rounds, seconds))
        finally:
            for server in servers:
                server.stop()
    print(f"\n{rounds} round(s) of {seconds:g} s slices, streams only; production config")
    print(f"paced: {options.events} events {options.gap_ms:g} ms apart, one per write")
    for checkout in checkouts:
        print(checkout.describe())
    report(results, [checkout.name for checkout in checkouts], events)


def start(
    workdir: Path,
    floors: dict[str, Floor],
    checkouts: list[Checkout],
    servers: list[GatewayServer],
) -> list[Target]:
    """The relay of each workload and each checkout's gateway for it (appended to
    ``servers`` as they start), with 20 stored turns for each user."""
    users = [f"bench-user-{user}" for user in range(max(CLIENTS))]
    targets = [replace(base.relay, name=f"relay/{workload}") for workload, base in floors.items()]
    for checkout in checkouts:
        database = f"sqlite:///{workdir / checkout.name}.sqlite3"
        keys: tuple[str, ...] = ()
        for workload, base in floors.items():
            directory = workdir / f"{checkout.name}-{workload}"
            directory.mkdir()
            server = GatewayServer(
                directory,
                config(base.upstream, "production"),
                database,
                project_dir=checkout.directory,
            )
            servers.append(server.start())
            if not keys:
                say(f"{checkout.name}: minting a key for each of {len(users)} users")
                keys = tuple(mint_key(server, user) for user in users)
            targets.append(
                Target(f"{checkout.name}/{workload}", f"{server.url}/v1", server.pid, keys)
            )
    return targets


async def measure(
    targets: list[Target], rounds: int, seconds: float
) -> dict[tuple[str, int], Cell]:
    """Streamed requests at each number of clients, each round of slices starting with
    another target, so a drift of the machine spreads over all of them."""
    for target in targets:
        if target.name.endswith("/whole") and not target.name.startswith("relay"):
            say(f"{target.name}: storing 20 turns for each of {max(CLIENTS)} users")
            await prefill(target, max(CLIENTS))  # the database its paced twin shares
    for target in targets:
        await run_slice(target, 16, False, 0.5, Cell())
        await run_slice(target, 4, True, 0.5, Cell())
    results = {(target.name, clients): Cell() for target in targets for clients in CLIENTS}
    for clients in CLIENTS:
        say(f"streaming, {clients} clients")
        for round_number in range(rounds):
            shift = round_number % len(targets)
            for target in targets[shift:] + targets[:shift]:
                await run_slice(target, clients, True, seconds, results[(target.name, clients)])
    return results


def report(
    results: dict[tuple[str, int], Cell], gateways: list[str], events: dict[str, int]
) -> None:
    print("server CPU ms/request (requests measured, errors):")
    names = "".join(f"{name:>22}" for name in ["relay", *gateways])
    print(f"{'workload':8} {'events':>6} {'clients':>7}{names}")
    for workload, count in events.items():
        for clients in CLIENTS:
            cells = [results[(f"{name}/{workload}", clients)] for name in ["relay", *gateways]]
            figures = "".join(
                f"{f'{cell.cpu_ms:.2f} ({cell.count}, {cell.errors})':>22}" for cell in cells
            )
            print(f"{workload:8} {count:6d} {clients:7d}{figures}")
    print("\neach gateway against its relay: CPU ratio, and CPU added per event (µs)")
    added: dict[tuple[str, str, int], float] = {}
    for workload, count in events.items():
        for clients in CLIENTS:
            relay = results[(f"relay/{workload}", clients)].cpu_ms
            shown = []
            for name in gateways:
                cpu = results[(f"{name}/{workload}", clients)].cpu_ms
                added[(name, workload, clients)] = (cpu - relay) * 1000 / count
                per_event = added[(name, workload, clients)]
                shown.append(f"{name} {cpu / relay:5.2f}x {per_event:+7.1f} µs/event")
            print(f"{workload:8} {clients:2d} clients: " + "   ".join(shown))
    for other in gateways[1:]:
        print(f"\n{gateways[0]}'s added CPU per event against {other}'s:")
        for workload in events:
            for clients in CLIENTS:
                ratio = added[(gateways[0], workload, clients)] / added[(other, workload, clients)]
                met = "met" if ratio <= HALF else "MISSED"
                label = f"{workload}, {clients:2d} clients"
                print(f"  {label:20} {ratio:5.2f}  (target <= {HALF}: {met})")


if __name__ == "__main__":
    main()
