"""The MCP server behind ``/mcp``: the ``mcp`` SDK's, stateless (each HTTP request one
JSON-RPC exchange, answered as JSON), so a request's credentials, user and log are those
of the HTTP request that carries the call, which the view hands it in the ASGI scope.

Each call of a tool is a request of the caller's: an ask is a turn like any, and a call
of an exposed tool counts for the key's requests per minute. A refusal inside a call (a
budget, a rate, a key that may not use the agent, an MCP server that fails) is the
tool's error (``isError``), as MCP clients expect; an ask that succeeds is the agent's
reply text."""

import logging
from typing import Any

import mcp_types as types
from django.utils import timezone
from mcp.server.context import ServerRequestContext
from mcp.server.lowlevel import Server
from mcp.server.streamable_http_manager import StreamableHTTPSessionManager

from inference.database import in_database
from inference.dialects.mcp.caller import caller_of
from inference.dialects.mcp.tools import Offered, offered_tools
from inference.money.admission import admit_tool_call
from inference.money.caller import Caller
from inference.neutral.errors import ApiError
from inference.neutral.request import Claims, ClientRequest
from inference.neutral.types import Message
from inference.serving.context import InferenceRequest
from inference.tools.failure import ToolFailed
from inference.turn.preparation import live_config, prepare_turn
from inference.turn.runner import TurnRunner

logger = logging.getLogger("gateway.mcp")


def _caller(ctx: ServerRequestContext[Any, Any]) -> InferenceRequest:
    return caller_of(ctx.request)


def _tools(caller: InferenceRequest) -> dict[str, Offered]:
    holder, engine = caller.runtime.holder, caller.runtime.engine
    config = live_config(holder.config, holder.problems)
    return offered_tools(config, caller.api_key, engine.mcp)


async def _list_tools(
    ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    tools = _tools(_caller(ctx))
    return types.ListToolsResult(
        tools=[
            types.Tool(name=name, description=item.description, input_schema=item.input_schema)
            for name, item in tools.items()
        ]
    )


async def _call_tool(
    ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
) -> types.CallToolResult:
    caller = _caller(ctx)
    offered = _tools(caller).get(params.name)
    arguments = params.arguments or {}
    try:
        if offered is None:
            raise ToolFailed(f"there is no tool named {params.name!r} for this caller")
        if offered.kind == "ask":
            text = await _ask(caller, offered.target, arguments)
        else:
            text = await _use(caller, offered, arguments)
    except (ApiError, ToolFailed) as failure:
        message = failure.message if isinstance(failure, ApiError) else str(failure)
        return types.CallToolResult(
            content=[types.TextContent(type="text", text=message)], is_error=True
        )
    return types.CallToolResult(content=[types.TextContent(type="text", text=text)])


async def _ask(caller: InferenceRequest, agent: str, arguments: dict[str, Any]) -> str:
    """A turn of ``agent`` for the caller's user, as any dialect's: history, budgets, cost,
    judges and traces."""
    message = arguments.get("message")
    if not isinstance(message, str) or not message.strip():
        raise ToolFailed('an ask takes {"message": "<what to ask>"}')
    holder, engine = caller.runtime.holder, caller.runtime.engine
    config = live_config(holder.config, holder.problems)
    client = ClientRequest(
        model=agent,
        system=(),
        messages=(Message(role="user", content=message),),
        claims=Claims(header_user=caller.headers.get("X-User-Id"), bound_user=caller.bound_user),
        conversation_param="arguments.message",
    )
    turn = await prepare_turn(
        client,
        config,
        engine,
        caller.log,
        id_prefix="mcp-",
        key=caller.api_key,
        span=caller.span,
        purpose="mcp",
    )
    replied = await TurnRunner(config, engine, caller.log).complete(turn)
    return replied.answer.text


async def _use(caller: InferenceRequest, offered: Offered, arguments: dict[str, Any]) -> str:
    """A call of an exposed tool: with a limited key, a request of the key's (its
    requests per minute, its budget), then the tool on its MCP server."""
    key = caller.api_key
    if key is not None:
        who = Caller(key.user, key, purpose="mcp", span=caller.span)
        await in_database(admit_tool_call, who, offered.name, timezone.now())
    server = caller.runtime.engine.mcp.server(offered.target)
    if server is None:
        raise ToolFailed(f"MCP server '{offered.target}' is not configured any more")
    return await server.call(offered.tool, arguments)


SERVER: Server[Any] = Server(
    "agent-gateway",
    instructions="The agents of this gateway (ask_<agent>) and, where the operator exposes "
    "them, the tools of their MCP servers (<server>__<tool>).",
    on_list_tools=_list_tools,
    on_call_tool=_call_tool,
)


def session_manager() -> StreamableHTTPSessionManager:
    return StreamableHTTPSessionManager(SERVER, json_response=True, stateless=True)
