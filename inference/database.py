"""Run a request's batched ORM work on the database threads.

Django's default (``thread_sensitive=True``) runs it on a thread made for each request,
so every request opened and closed its own database connection. A small pool of its own
(``DATABASE_THREADS``) keeps one connection per thread across requests: every call is one
short unit of work, so a few threads keep up with a process's load, and each thread less
is a connection, its caches and a thread's memory less than the event loop's default
pool (cores + 4 threads). Each call first drops a connection that broke or grew old
(``CONN_MAX_AGE``, ``CONN_HEALTH_CHECKS`` in settings). Every function run here does its
whole unit of work, transaction included, in one call.
"""

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor

from asgiref.sync import sync_to_async
from django.db import close_old_connections

DATABASE_THREADS = 3
_threads = ThreadPoolExecutor(max_workers=DATABASE_THREADS, thread_name_prefix="database")


async def in_database[**P, R](function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    return await sync_to_async(_with_usable_connection, thread_sensitive=False, executor=_threads)(
        function, *args, **kwargs
    )


def _with_usable_connection[**P, R](
    function: Callable[P, R], *args: P.args, **kwargs: P.kwargs
) -> R:
    close_old_connections()
    return function(*args, **kwargs)
