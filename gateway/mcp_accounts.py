"""The browser's half of connecting a user's account at an MCP server that signs each user
in (docs/mcp.md): ``GET /mcp/{server}/connect?state=…``, the link a tool call answered,
sends the browser to the authorization server; ``GET /mcp/{server}/callback`` takes its
answer, keeps the user's tokens and says the account is connected. ``POST
/mcp/{server}/connect-link?user_id=…`` (Coulisse's, for scripts and chat bridges, with
``Authorization: Bearer <auth.mcp_consumer_secret>``) answers ``{"url": …}``, the connect
link of that user.

Plain Django views, not the API's: the signed state says whom the link is for (no API
key), and the browser that opens them may be on any machine. What goes wrong is said in
plain text to the person who opened the link.
"""

import hmac

from django.http import HttpRequest, HttpResponse, HttpResponseRedirect, JsonResponse
from django.utils.html import format_html
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_GET, require_POST

from agents.schema import Config
from gateway import runtime
from inference.mcpauth.failures import SignInFailed
from inference.mcpauth.links import connect_link as link_for
from inference.mcpauth.links import read_connect_link

_CONNECTED = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>Connected</title></head>
<body><p>Your account at <strong>{}</strong> is connected. You can close this page and go
back to the conversation.</p></body></html>
"""


@require_GET
async def connect(request: HttpRequest, server: str) -> HttpResponse:
    process = runtime.current()
    config = _live_config(process.holder.config, server)
    if isinstance(config, HttpResponse):
        return config
    try:
        invitation = read_connect_link(request.GET.get("state", ""), server)
        location = await process.engine.mcp.auth.authorization_url(config, server, invitation)
    except SignInFailed as failure:
        return _plain(failure.status, str(failure))
    response = HttpResponseRedirect(location)
    response["Cache-Control"] = "no-store"
    return response


@require_GET
async def callback(request: HttpRequest, server: str) -> HttpResponse:
    process = runtime.current()
    config = _live_config(process.holder.config, server)
    if isinstance(config, HttpResponse):
        return config
    try:
        await process.engine.mcp.auth.complete(config, server, request.GET)
    except SignInFailed as failure:
        return _plain(failure.status, str(failure))
    response = HttpResponse(format_html(_CONNECTED, server))
    response["Cache-Control"] = "no-store"
    return response


@csrf_exempt
@require_POST
async def connect_link(request: HttpRequest, server: str) -> HttpResponse:
    config = runtime.current().holder.config
    secret = config.auth.mcp_consumer_secret if config and config.auth else None
    if not secret:
        return _plain(
            503, "POST /mcp/{server}/connect-link is off: auth.mcp_consumer_secret is not set."
        )
    sent = request.headers.get("Authorization", "").encode()
    if not hmac.compare_digest(sent, f"Bearer {secret}".encode()):
        return _plain(401, "Authorization: Bearer <auth.mcp_consumer_secret> is required.")
    live = _live_config(config, server)
    if isinstance(live, HttpResponse):
        return live
    user_id = request.GET.get("user_id", "").strip()
    if not user_id:
        return _plain(422, "The query parameter user_id is required.")
    link = link_for(live.public_base_url or "", server, user_id)
    return JsonResponse({"url": link}, headers={"Cache-Control": "no-store"})


def _live_config(config: Config | None, server: str) -> Config | HttpResponse:
    """The live config, or the answer when it has no server of that name that signs
    users in."""
    if config is None:
        return _plain(503, "The gateway has no valid configuration loaded; try again later.")
    settings = config.mcp.get(server)
    if settings is None or settings.oauth is None:
        return _plain(404, f"There is no MCP server '{server}' that signs users in.")
    return config


def _plain(status: int, message: str) -> HttpResponse:
    response = HttpResponse(f"{message}\n", status=status, content_type="text/plain; charset=utf-8")
    response["Cache-Control"] = "no-store"
    return response
