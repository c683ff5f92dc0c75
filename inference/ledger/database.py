"""Run a request's batched ORM work on the database threads.

Django's default (``thread_sensitive=True``) runs it on a thread made for each request,
so every request opened and closed its own database connection. A small pool of its own
(``DATABASE_THREADS``) keeps one connection per thread across requests: every call is one
short unit of work, so a few threads keep up with a process's load, and each thread less
is a connection, its caches and a thread's memory less than the event loop's default
pool (cores + 4 threads). Each call first drops a connection that broke or grew old
(``CONN_MAX_AGE``, ``CONN_HEALTH_CHECKS`` in settings). Every function run here does its
whole unit of work, transaction included, in one call.

The hop is the event loop's own ``run_in_executor`` in a copy of the caller's context,
not asgiref's ``sync_to_async``: that one also tracks the calling task, re-homes its
locals and copies the context back afterwards, none of which a unit of ORM work needs,
and which cost about a tenth of a request's CPU when every request made two hops.
"""

import asyncio
import contextvars
import functools
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from django.db import close_old_connections

DATABASE_THREADS = 3
_threads = ThreadPoolExecutor(max_workers=DATABASE_THREADS, thread_name_prefix="database")


async def in_database[**P, R](function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    work = functools.partial(_with_usable_connection, function, *args, **kwargs)
    context = contextvars.copy_context()
    return await asyncio.get_running_loop().run_in_executor(_threads, context.run, work)


def _with_usable_connection[**P, R](
    function: Callable[P, R], *args: P.args, **kwargs: P.kwargs
) -> R:
    close_old_connections()
    return function(*args, **kwargs)
