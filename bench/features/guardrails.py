"""What a ``pii`` and a ``secrets`` guardrail add to a request of a 2 kB message, side by
side in one run.

Starts the fake OpenAI upstream, the bare relay and two gateways with
``auth.proxy.api_keys: true`` and both guardrails defined. The first is called as
``plain`` (every request with a key of its user that lists no guardrail) and as
``guarded`` (keys that list ``pii`` (redacting) and ``secrets`` (blocking)): the same
agent, the same 2 kB message with an e-mail address in it (redacted, then restored in
the reply, and an event kept). The second, on a database of its own, as ``clean``:
guarded keys, the message without the address (the checks find nothing). Each user's
history is replayed with every request, as usual. Slices of each target interleave, as
in ``bench.floor.compare``, and the server CPU per request is printed against ``plain``
(the target: under 10 % more). Since a few percent is within this machine's noise
between slices, the checks of one message are also timed in this process, without the
servers.

    .venv/bin/python -m bench.features.guardrails [--rounds 3] [--seconds 3]
"""

import argparse
import asyncio
import tempfile
import time
from pathlib import Path

from agents.schema import GuardrailConfig
from bench.harness.load import Cell, Target, interleave, print_cpu
from bench.harness.processes import floor, gateways, mint_key
from inference.guardrails.guards import finder
from inference.guardrails.placeholders import Vault

CLIENTS = (1, 16)
GUARDRAILS = (
    "auth: {proxy: {api_keys: true}}\n"
    "guardrails:\n"
    "  - {name: pii, kind: pii, action: redact}\n"
    "  - {name: secrets, kind: secrets}\n"
)
SENTENCE = "The build of the payments service failed again on the integration stage. "


def message(user: int, index: int) -> str:
    """About 2 kB of prose with one e-mail address in it."""
    prose = SENTENCE * 26
    return f"Question {index}: please mail bench-{user}@example.com about this. {prose}"


def clean(user: int, index: int) -> str:
    """The same message without the address: the guardrails find nothing."""
    return message(user, index).replace("@example.com", " of the team")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=3.0)
    options = parser.parse_args()
    with (
        tempfile.TemporaryDirectory() as workdir,
        floor() as base,
        gateways(
            Path(workdir), base.upstream, dict.fromkeys(("gateway", "clean"), GUARDRAILS)
        ) as servers,
    ):
        server, other = servers["gateway"], servers["clean"]
        users = [f"bench-user-{user}" for user in range(max(CLIENTS))]
        plain = tuple(mint_key(server, user) for user in users)
        guarded = tuple(mint_key(server, user, "--guardrails", "pii,secrets") for user in users)
        # A database of its own: no history with an address in it.
        cleans = tuple(mint_key(other, user, "--guardrails", "pii,secrets") for user in users)
        url = f"{server.url}/v1"
        targets = [
            Target("plain", url, server.pid, plain, message),
            Target("guarded", url, server.pid, guarded, message),
            Target("clean", f"{other.url}/v1", other.pid, cleans, clean),
        ]
        results = asyncio.run(interleave(targets, CLIENTS, options.rounds, options.seconds))
    print(f"\n{len(message(0, 0))}-character message; {options.rounds} round(s) of "
          f"{options.seconds:g} s slices; server CPU ms/request")  # fmt: skip
    print_cpu(targets, results, CLIENTS, _ratios)
    checks_us = _checks_us()
    plain_us = results[("plain", False, 1)].cpu_ms * 1000
    print(
        f"in process, per message: the pii and secrets checks and the redaction {checks_us:.0f} µs"
        f" ({100 * checks_us / plain_us:.1f}% of plain's CPU at 1 client)"
    )


def _ratios(cells: dict[str, Cell]) -> str:
    plain = cells["plain"].cpu_ms
    guarded, found_nothing = cells["guarded"].cpu_ms / plain, cells["clean"].cpu_ms / plain
    return f"guarded/plain {guarded:5.3f}  clean/plain {found_nothing:5.3f}"


def _checks_us(count: int = 300) -> float:
    """µs of what the two guardrails do with a message they have not seen on its way up:
    find, redact (a message seen before, replayed history, is remembered)."""
    pii = finder(GuardrailConfig(name="pii", kind="pii", action="redact"))
    secrets = finder(GuardrailConfig(name="secrets", kind="secrets"))
    pii(message(0, -1))  # Presidio is loaded by the first check
    texts = [message(0, index) for index in range(count)]

    started = time.process_time()
    for text in texts:
        redacted = Vault().redact(text, pii(text))
        secrets(redacted)
    return (time.process_time() - started) / count * 1e6


if __name__ == "__main__":
    main()
