"""Database statements, database-thread calls and database-thread CPU per request,
counted in a gateway served in this process.

The gateway's own ASGI application (``gateway.asgi``: the runtime, the middleware, the
dialect, the engine's record writer) runs here with the production config of
``bench.floor.production`` (history replay of 40 messages, a price, a minted key per
user, the trace store, two deployments), on a database of its own (SQLite, or
``--database-url``), against the fake OpenAI upstream on loopback. Every statement the
database threads run is counted with Django's ``execute_wrapper`` installed on each
thread's connection, and so is each health check of a reused connection (on PostgreSQL a
``SELECT 1`` round trip that passes no wrapper); the calls to those threads with
``inference.database.calls_made``, their CPU with the threads' CPU clocks.

Turns, each user's conversation prefilled with 20 turns:

- ``json``, ``stream``: turn after turn of one user (a hot conversation: this process
  wrote its last turn);
- ``appended``: a turn after another process appended one (rows written here without
  the gateway, as another worker writes them);
- ``first``: the first turn this process serves of a conversation another process
  stored;
- ``json, 2000 turns stored``: a hot conversation of 4,000 stored messages (the replay
  still the newest 40);
- ``json, a key with limits``: a hot conversation whose key has a budget and requests and
  tokens per minute (admitted, and its tokens reserved, before the model call);
- ``json, caps per hour and day``: a hot conversation whose requests cap the user's
  tokens per hour and per day (``metadata``), likewise admitted and reserved.

A request's key is looked up at most once a second (``inference.serving.auth``) and its
record is written with the others of that second (the writer's deferred group): both are
shown apart, as what one lookup and one group of records cost.

    .venv/bin/python -m bench.features.statements [--requests 50] [--database-url URL] [--json]
"""

import argparse
import asyncio
import json
import logging
import os
import re
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, cast

PREFILLED_TURNS = 20
LONG, LONG_TURNS = "bench-user-long", 2000  # a long conversation: 4,000 rows stored
LIMITED = "bench-user-limited"  # its key has limits: every turn is admitted and reserved
CAPPED = "bench-user-capped"  # its requests cap its tokens per hour and per day
_TABLE = re.compile(r'(?:FROM|INTO|UPDATE)\s+"?(\w+)"?', re.IGNORECASE)


@dataclass
class Tally:
    """What the database threads did meanwhile: their statements (a label each: verb and
    table), the health checks of reused connections, the calls made to them, their CPU."""

    statements: Counter[str] = field(default_factory=Counter)
    health_checks: int = 0
    calls: int = 0
    cpu: float = 0.0  # seconds
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def note(self, sql: str) -> None:
        verb = sql.split(None, 1)[0].upper()
        table = _TABLE.search(sql)
        label = f"{verb} {table.group(1)}" if table and verb != "BEGIN" else verb
        with self._lock:
            self.statements[label] += 1

    @property
    def total(self) -> int:
        return sum(self.statements.values())

    def per(self, turns: int) -> dict[str, Any]:
        return {
            "statements": self.total / turns,
            "health_checks": self.health_checks / turns,
            "calls": self.calls / turns,
            "cpu_ms": self.cpu * 1000 / turns,
            "by_statement": {label: n / turns for label, n in sorted(self.statements.items())},
        }


class Counting:
    """Counts what the database threads do into the current tally (none: nothing)."""

    def __init__(self) -> None:
        self.tally: Tally | None = None
        self.clocks: list[int] = []  # the database threads' CPU clocks

    def __call__(
        self, execute: Callable[..., Any], sql: str, params: Any, many: bool, context: Any
    ) -> Any:
        if self.tally is not None:
            self.tally.note(sql)
        return execute(sql, params, many, context)

    def checked(self, is_usable: Callable[[], bool]) -> Callable[[], bool]:
        def counted() -> bool:
            if self.tally is not None:
                self.tally.health_checks += 1
            return is_usable()

        return counted

    def cpu(self) -> float:
        return sum(time.clock_gettime(clock) for clock in self.clocks)

    @contextmanager
    def into(self, tally: Tally) -> Iterator[Tally]:
        from inference.database import calls_made

        calls, cpu = calls_made(), self.cpu()
        self.tally = tally
        try:
            yield tally
        finally:
            self.tally = None
            tally.calls += calls_made() - calls
            tally.cpu += self.cpu() - cpu


async def count_on_every_database_thread(counting: Counting) -> None:
    """Install ``counting`` on the connection of each database thread: as many calls as
    there are threads, each held at a barrier until all of them run, so each runs on a
    thread of its own."""
    from django.db import connection

    from inference.database import DATABASE_THREADS, in_database

    barrier = threading.Barrier(DATABASE_THREADS, timeout=10)

    def install() -> None:
        barrier.wait()
        counting.clocks.append(time.pthread_getcpuclockid(threading.get_ident()))
        connection.execute_wrappers.append(counting)
        # The health check runs on the driver's connection, past the wrappers.
        connection.is_usable = counting.checked(connection.is_usable)  # type: ignore[method-assign]

    await asyncio.gather(*(in_database(install) for _ in range(DATABASE_THREADS)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--requests", type=int, default=50, help="turns of each kind counted")
    parser.add_argument("--database-url", help="default: a SQLite file of its own")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        results = measure(Path(workdir), options.database_url, options.requests)
    if options.json:
        print(json.dumps(results))
    else:
        report(results, options.requests)


def measure(workdir: Path, database_url: str | None, requests: int) -> dict[str, Any]:
    """The counts of each kind of turn, from a gateway served in this process (once a
    process: the gateway's runtime is the process's)."""
    from bench.floor.production import config
    from tests.fakes.openai_upstream import OpenAIUpstream
    from tests.upstreams import fake_base_url

    upstream = OpenAIUpstream().start()
    try:
        (workdir / "gateway.yaml").write_text(config(fake_base_url(upstream), "production"))
        os.environ["GATEWAY_CONFIG"] = str(workdir / "gateway.yaml")
        os.environ["DATABASE_URL"] = database_url or f"sqlite:///{workdir / 'gateway.sqlite3'}"
        os.environ["DJANGO_SETTINGS_MODULE"] = "gateway.settings"
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", interactive=False, verbosity=0)
        logging.disable(logging.INFO)  # the requests' log lines
        return asyncio.run(_served(requests))
    finally:
        upstream.stop()


class Client:
    """Turns of users through the gateway's ASGI application, each user with a key."""

    def __init__(self, http: Any) -> None:
        self.http = http
        self.keys: dict[str, str] = {}
        self.asked = 0

    async def known(self, user: str) -> dict[str, str]:
        """The headers of ``user``'s requests, its key minted and just looked up by the
        gateway (which then trusts it for a second)."""
        if user not in self.keys:
            self.keys[user] = await _minted(user)
            headers = {"Authorization": f"Bearer {self.keys[user]}"}
            (await self.http.get("/v1/models", headers=headers)).raise_for_status()
        return {"Authorization": f"Bearer {self.keys[user]}"}

    async def turn(self, user: str, stream: bool = False) -> None:
        headers = await self.known(user)
        self.asked += 1
        body: dict[str, Any] = {
            "model": "bench",
            "messages": [{"role": "user", "content": f"question {self.asked} of a benchmark"}],
        }
        if user == CAPPED:
            body["metadata"] = {"tokens_per_hour": "1000000000", "tokens_per_day": "1000000000"}
        if stream:
            body |= {"stream": True, "stream_options": {"include_usage": True}}
        response = await self.http.post("/v1/chat/completions", json=body, headers=headers)
        if response.status_code != 200:
            raise RuntimeError(f"{response.status_code} {response.text}")


async def _minted(user: str) -> str:
    """A key of ``user``; with limits (a budget, requests and tokens per minute, none of
    them reached) for ``LIMITED``."""
    from inference.database import in_database
    from inference.money.keys import KeySpec, create_key

    spec = KeySpec(name="bench", user=user)
    if user == LIMITED:
        spec = KeySpec(name="bench", user=user, budget_usd=1000, rpm=100_000, tpm=10**9)
    _, key = await in_database(create_key, spec)
    return key


async def _stored_elsewhere(user: str, turns: int) -> None:
    """``turns`` of ``user`` written as another process writes them (not through this
    process's history cache)."""
    from inference.database import in_database
    from inference.models import StoredMessage

    rows = [
        StoredMessage(user_id=user, model="bench", role=role, content=f"{role} {index} elsewhere")
        for index in range(turns)
        for role in ("user", "assistant")
    ]
    await in_database(StoredMessage.objects.bulk_create, rows)


async def _served(requests: int) -> dict[str, Any]:
    import httpx

    from gateway.asgi import application, process

    await process.started()
    counting = Counting()
    await count_on_every_database_thread(counting)
    writer = process.engine.writer
    transport = httpx.ASGITransport(app=cast(Any, application))
    results: dict[str, Any] = {}
    async with httpx.AsyncClient(
        transport=transport, base_url="http://gateway", timeout=30
    ) as http:
        client = Client(http)
        hot, others = "bench-user-0", [f"bench-user-{index}" for index in range(1, requests + 1)]
        for _ in range(PREFILLED_TURNS):
            await client.turn(hot)
        for user in others:
            await _stored_elsewhere(user, PREFILLED_TURNS)
            await client.turn(user)  # the key looked up, cached for a second
        await writer.stop(drain=0)  # the deferred request records written
        for stream in (False, True):
            with counting.into(Tally()) as own:
                for _ in range(requests):
                    await client.turn(hot, stream)
            results["stream" if stream else "json"] = own.per(requests)
            with counting.into(Tally()) as records:
                await writer.stop(drain=0)
            results[f"records of {requests}"] = records.per(1)
        appended = Tally()
        for _ in range(requests):
            await _stored_elsewhere(hot, 1)
            with counting.into(appended):
                await client.turn(hot)
        results["appended"] = appended.per(requests)
        first = Tally()
        for index in range(requests):
            user = f"bench-user-first-{index}"
            await client.known(user)
            await _stored_elsewhere(user, PREFILLED_TURNS)
            with counting.into(first):
                await client.turn(user)
        results["first"] = first.per(requests)
        await _stored_elsewhere(LONG, LONG_TURNS)
        await client.turn(LONG)
        with counting.into(Tally()) as long:
            for _ in range(requests):
                await client.turn(LONG)
        results[f"json, {LONG_TURNS} turns stored"] = long.per(requests)
        for _ in range(PREFILLED_TURNS):
            await client.turn(LIMITED)
        with counting.into(Tally()) as limited:
            for _ in range(requests):
                await client.turn(LIMITED)
        results["json, a key with limits"] = limited.per(requests)
        for _ in range(PREFILLED_TURNS):
            await client.turn(CAPPED)
        with counting.into(Tally()) as capped:
            for _ in range(requests):
                await client.turn(CAPPED)
        results["json, caps per hour and day"] = capped.per(requests)
        await asyncio.sleep(1.1)  # the key's grant is trusted for a second
        with counting.into(Tally()) as lookup:
            await client.turn(hot)
        results["turn with the key's lookup"] = lookup.per(1)
        await writer.stop(drain=0)
    await process.stop()
    return results


def report(results: dict[str, Any], requests: int) -> None:
    print(
        f"database work of {requests} turns of each kind, {PREFILLED_TURNS} turns stored per "
        "conversation, production config (a minted key per user)"
    )
    print(f"{'':28}{'statements':>11}{'checks':>8}{'calls':>7}{'CPU ms':>8}")
    for name, part in results.items():
        print(
            f"{name:28}{part['statements']:11.2f}{part['health_checks']:8.2f}"
            f"{part['calls']:7.2f}{part['cpu_ms']:8.3f}   "
            + ", ".join(f"{count:g} {label}" for label, count in part["by_statement"].items())
        )
    print(
        "checks: health checks of a reused connection (a SELECT 1 round trip on PostgreSQL); "
        "calls: to the database threads"
    )


if __name__ == "__main__":
    main()
