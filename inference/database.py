"""Run a request's batched ORM work on the shared worker pool.

Django's default (``thread_sensitive=True``) runs it on a thread made for each request,
so every request opened and closed its own database connection. The shared pool keeps
one connection per worker thread across requests; each call first drops a connection
that broke or grew old (``CONN_MAX_AGE``, ``CONN_HEALTH_CHECKS`` in settings). Every
function run here does its whole unit of work, transaction included, in one call.
"""

from collections.abc import Callable

from asgiref.sync import sync_to_async
from django.db import close_old_connections


async def in_database[**P, R](function: Callable[P, R], *args: P.args, **kwargs: P.kwargs) -> R:
    return await sync_to_async(_with_usable_connection, thread_sensitive=False)(
        function, *args, **kwargs
    )


def _with_usable_connection[**P, R](
    function: Callable[P, R], *args: P.args, **kwargs: P.kwargs
) -> R:
    close_old_connections()
    return function(*args, **kwargs)
