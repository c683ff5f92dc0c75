"""Run a request's batched ORM work on the database threads.

Django's default (``thread_sensitive=True``) runs it on a thread made for each request,
so every request opened and closed its own database connection. A small pool of its own
(``DATABASE_THREADS``) keeps one connection per thread across requests: every call is one
short unit of work, so a few threads keep up with a process's load, and each thread less
is a connection, its caches and a thread's memory less than the event loop's default
pool (cores + 4 threads). Every function run here does its whole unit of work,
transaction included, in one call.

Each call first drops a connection that grew old (``CONN_MAX_AGE``) or whose last unit
failed and that no longer answers, and checks one that sat idle for more than
``IDLE_CHECK_SECONDS`` (a ``SELECT 1`` round trip on PostgreSQL: a server restart, a
proxy or firewall that dropped it). Django's own check (``CONN_HEALTH_CHECKS``, off in
settings) would ask before every call: two round trips more per request, on connections
that answered a moment ago. A connection that breaks while in use fails the unit it
runs, and at most the next one on its thread within the second (the writer retries a
failed group record by record, on a connection checked again).

The hop is the event loop's own ``run_in_executor`` in a copy of the caller's context,
not asgiref's ``sync_to_async``: that one also tracks the calling task, re-homes its
locals and copies the context back afterwards, none of which a unit of ORM work needs,
and which cost about a tenth of a request's CPU when every request made two hops.
"""

import asyncio
import contextvars
import functools
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass

from django.db import close_old_connections, connection
from django.db.models import Field, Model
from django.db.models.sql import InsertQuery

DATABASE_THREADS = 3
MAX_CHUNK = 64  # rows in one INSERT of one placeholder per cell
_threads = ThreadPoolExecutor(max_workers=DATABASE_THREADS, thread_name_prefix="database")
_calls = 0  # made by this process (from its event loop)
IDLE_CHECK_SECONDS = 1.0
_last_use = threading.local()  # each database thread's, its ``at`` (monotonic seconds)


async def in_database[**P, R](function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    global _calls
    _calls += 1
    work = functools.partial(_with_usable_connection, function, *args, **kwargs)
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(_threads, context.run, work)


def calls_made() -> int:
    """How many calls this process made to the database threads (each a round trip from
    the event loop: ``bench.features.statements`` counts them per request)."""
    return _calls


def _with_usable_connection[**P, R](
    function: Callable[P, R], *args: P.args, **kwargs: P.kwargs
) -> R:
    close_old_connections()
    idle = time.monotonic() - getattr(_last_use, "at", float("-inf"))
    opened = connection.connection is not None
    if opened and idle > IDLE_CHECK_SECONDS and not connection.is_usable():
        connection.close()  # the function's first statement connects again
    try:
        return function(*args, **kwargs)
    finally:
        _last_use.at = time.monotonic()


@dataclass(frozen=True)
class _Insert:
    statement: str
    fields: list[Field]  # type: ignore[type-arg]  # the columns, in the statement's order
    columnar: bool  # the parameters are one array per column, not one value per cell


def insert_rows(rows: Sequence[Model], ids: bool = False) -> None:
    """Insert ``rows`` (instances of one model); ``ids``: set each row's id from the
    database. Like ``bulk_create``, whose SQL the ORM builds here only once per model and
    number of rows: building it for every write cost three times what the insert did
    (about 400 us against 150 for a turn's two history rows).

    Where a statement holds one placeholder per cell (SQLite), the rows go in chunks of a
    power of two, so a process prepares a handful of statement shapes per model, not one
    per batch size: SQLite keeps each connection's prepared statements (128 of them), and
    the writer's batches of every size from 1 to a few dozen rows made it hold tens of MB."""
    if not rows:
        return
    model = type(rows[0])
    if len(rows) > 1:
        insert = _insert_statement(connection.vendor, model, 2, ids)
        if insert.columnar:  # PostgreSQL: one statement for any number of rows
            _execute(insert, rows, ids)
            return
    start = 0
    while start < len(rows):
        count = min(MAX_CHUNK, 1 << ((len(rows) - start).bit_length() - 1))
        insert = _insert_statement(connection.vendor, model, count, ids)
        _execute(insert, rows[start : start + count], ids)
        start += count


def _execute(insert: _Insert, rows: Sequence[Model], ids: bool) -> None:
    values = [
        [field.get_db_prep_save(field.pre_save(row, True), connection) for field in insert.fields]
        for row in rows
    ]
    if insert.columnar:
        params = [list(column) for column in zip(*values, strict=True)]
    else:
        params = [value for row in values for value in row]
    with connection.cursor() as cursor:
        cursor.execute(insert.statement, params)
        if ids:
            for row, (pk,) in zip(rows, cursor.fetchall(), strict=True):
                row.pk = pk


@functools.cache
def _insert_statement(vendor: str, model: type[Model], count: int, ids: bool) -> _Insert:
    """The INSERT of ``count`` rows of ``model`` (every column but the id), returning
    their ids when ``ids``, as the ORM writes it."""
    fields = [field for field in model._meta.concrete_fields if field is not model._meta.pk]
    query = InsertQuery(model)
    query.insert_values(fields, [model() for _ in range(count)])
    compiler = query.get_compiler(connection=connection)
    compiler.returning_fields = [model._meta.pk] if ids else None
    [(statement, params)] = compiler.as_sql()
    return _Insert(statement, fields, columnar=count > 1 and len(params) == len(fields))


def lock_until_commit(*names: str) -> None:
    """Serialize the transactions that take the locks ``names`` (a user's or a key's budget
    checks, a user's memory writes) across processes until the transaction ends, taken in
    the order given, in one statement."""
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT pg_advisory_xact_lock(hashtextextended(name, 0)) "
                "FROM unnest(%s::text[]) AS name",
                [list(names)],
            )
    # SQLite: the transaction began IMMEDIATE (settings), holding the database's write lock.
