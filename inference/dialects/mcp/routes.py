"""``/mcp``: the MCP server's endpoint (streamable HTTP), behind the API's middleware like
every dialect (credentials, the request log and record, the error shape). The HTTP
request is handed to the ``mcp`` SDK's session manager as ASGI, with the request itself
in the scope for the tools to act for its user and key; its answer (JSON) comes back as
the response."""

import asyncio
from collections.abc import MutableMapping
from typing import TYPE_CHECKING, Any

from django.http import HttpResponse

from inference.dialects.mcp.caller import CALLER
from inference.engine import Engine
from inference.serving.context import InferenceRequest
from inference.serving.routes import dialect_api

if TYPE_CHECKING:
    from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

api = dialect_api("mcp", lambda path: "a JSON-RPC message")


@api.api_operation(["GET", "POST", "DELETE"], "/mcp")
async def mcp_endpoint(request: InferenceRequest) -> HttpResponse:
    manager = await _running(request.runtime.engine)
    sent: list[dict[str, Any]] = []
    body = request.body
    delivered = False

    async def receive() -> dict[str, Any]:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        await asyncio.Event().wait()  # no more body; the exchange ends with the answer
        return {"type": "http.disconnect"}

    async def send(message: MutableMapping[str, Any]) -> None:
        sent.append(dict(message))

    scope: dict[str, Any] = getattr(request, "scope", {})  # Django's ASGI request keeps it
    await manager.handle_request({**scope, CALLER: request}, receive, send)
    return _response(sent)


def _response(sent: list[dict[str, Any]]) -> HttpResponse:
    start = next(message for message in sent if message["type"] == "http.response.start")
    body = b"".join(
        message.get("body", b"") for message in sent if message["type"] == "http.response.body"
    )
    response = HttpResponse(body, status=start["status"])
    for name, value in start.get("headers", []):
        response[name.decode("latin-1")] = value.decode("latin-1")
    return response


_managers: dict[int, "asyncio.Future[StreamableHTTPSessionManager]"] = {}


async def _running(engine: Engine) -> "StreamableHTTPSessionManager":
    """The session manager of ``engine``'s process, started on the first request and
    running until the engine stops (the SDK's server is loaded then: a process nobody
    asks over MCP never loads it)."""
    started = _managers.get(id(engine))
    if started is None:
        from inference.dialects.mcp.server import session_manager

        started = _managers[id(engine)] = asyncio.get_running_loop().create_future()
        engine.services.add(asyncio.create_task(_serve(session_manager(), started), name="mcp"))
    return await asyncio.shield(started)


async def _serve(
    manager: "StreamableHTTPSessionManager",
    started: "asyncio.Future[StreamableHTTPSessionManager]",
) -> None:
    async with manager.run():
        started.set_result(manager)
        await asyncio.Event().wait()
