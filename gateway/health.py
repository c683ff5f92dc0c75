"""Liveness and readiness probes."""

from asgiref.sync import sync_to_async
from django.db import connection
from django.db.utils import Error as DatabaseError
from django.http import HttpRequest, JsonResponse

from gateway import runtime

PROBES = ("/healthz", "/readyz")  # answered while the process stops (gateway.server.draining)


async def healthz(request: HttpRequest) -> JsonResponse:
    return JsonResponse({"status": "ok"})


async def readyz(request: HttpRequest) -> JsonResponse:
    process = runtime.current()
    holder = process.holder
    checks = {
        "config": "ok" if holder.config is not None else "; ".join(holder.problems),
        "database": await sync_to_async(_database_check)(),
    }
    if process.stopping:  # a load balancer sends it nothing more (gateway.server.draining)
        return JsonResponse({"status": "stopping"}, status=503)
    ready = all(value == "ok" for value in checks.values())
    return JsonResponse(
        {"status": "ok" if ready else "unavailable", **checks}, status=200 if ready else 503
    )


def _database_check() -> str:
    try:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1")
    except DatabaseError as error:
        return f"unreachable: {error}"
    return "ok"
