"""Running the agent's own tools: an MCP server's tool, a subagent, a skill's tool, or
one of the tools of background tasks.

A subagent answers in a fresh conversation under its own preamble and tools, one level
deeper; an agent at ``MAX_SUBAGENT_DEPTH`` has its subagent calls refused. Whatever goes
wrong in a tool is reported to the model as the tool's result, never to the client.
"""

import json
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from django.utils import timezone

from agents.schema import AgentConfig, Config
from inference.cache.calls import CachedAgent, CachedCalls
from inference.cache.use import TurnCache
from inference.database import in_database
from inference.neutral.calls import ModelCalls
from inference.neutral.errors import ApiError
from inference.neutral.types import (
    ChatRequest,
    Message,
    ResponseFormat,
    ToolCall,
    Usage,
    arguments_object,
)
from inference.providers.base import ProviderError
from inference.routing.deployments import Route, route_of
from inference.routing.experiments import bandit_arms, route
from inference.routing.upstream import Attempt, RoutingEngine, Upstream
from inference.telemetry.genai import (
    agent_attributes,
    cache_attributes,
    tool_attributes,
    tool_result_attributes,
    usage_attributes,
)
from inference.telemetry.spans import NO_SPAN, Span
from inference.telemetry.tracing import TRACING
from inference.tools.bounds import TurnBounds, TurnStopped
from inference.tools.failure import ToolFailed
from inference.tools.loop import ToolLoop
from inference.tools.mcp import McpHub
from inference.tools.skills import run_skill_tool, skills_prompt
from inference.tools.tasks import TaskSignal, run_task_tool
from inference.tools.toolbox import AgentTool, Toolbox, build_toolbox

MAX_SUBAGENT_DEPTH = 4


class Borrowed(RoutingEngine, Protocol):
    """What a conversation borrows from the process's engine (``inference.engine``), which
    itself owns the MCP hub of this package."""

    @property
    def mcp(self) -> McpHub: ...

    @property
    def tasks(self) -> TaskSignal: ...


@dataclass(frozen=True)
class CallContext:
    """Who a conversation runs for, and how deep in subagent calls it is (0: the agent
    the client called)."""

    config: Config
    engine: Borrowed
    user_id: str
    bounds: TurnBounds  # the turn's, shared by all of its levels
    depth: int = 0
    # Every upstream attempt of the turn's conversations, at every level (the request log).
    journal: list[Attempt] = field(default_factory=list)
    span: Span = NO_SPAN  # the conversation's invoke_agent span
    # The turn's use of the response cache (None: a judge's, a shadow's: never cached).
    cache: TurnCache | None = None


def tool_loop(
    context: CallContext,
    route: Route,
    toolbox: Toolbox,
    response_format: ResponseFormat | None = None,
    agent: AgentConfig | None = None,
) -> ToolLoop:
    """The loop of one conversation with a model, whoever holds it (a turn, a subagent, a
    shadow, a judge): its calls go to the route's deployments, each attempt admitted by the
    turn's bounds, through the response cache when ``agent`` (the one conversing) has
    one and the turn may use it; the agent's own tools run at the context's depth, and a
    reply is checked against ``response_format`` with the config's repairs."""
    turn = context.cache if agent is not None and agent.cache is not None else None
    marks = None
    if turn is not None:
        marks = cache_attributes("bypass" if turn.control.bypassed else "miss")
    upstream = Upstream(
        route,
        context.config,
        context.engine,
        context.bounds,
        context.journal,
        context.span,
        marks,
    )
    calls: ModelCalls = upstream
    reads_or_writes = turn is not None and not turn.control.bypassed
    if agent is not None and agent.cache is not None and turn is not None and reads_or_writes:
        cached = CachedAgent(agent, agent.cache, route, turn, answering=context.depth == 0)
        calls = CachedCalls(upstream, cached, context.config, context.engine, context.span)
    return ToolLoop(
        calls,
        toolbox,
        ToolExecutor(context, toolbox).run,
        response_format,
        context.config.structured_output.max_repairs,
        bounds=context.bounds,
    )


class ToolExecutor:
    def __init__(self, context: CallContext, toolbox: Toolbox) -> None:
        self.context = context
        self.toolbox = toolbox

    async def run(self, call: ToolCall) -> tuple[Message, Usage]:
        tool = self.toolbox.agent_tools[call.name]
        usage = Usage()
        with self.context.span.child(f"execute_tool {tool.name}") as span:
            if span.recording:
                span.set(tool_attributes(tool.name, tool.kind, call, TRACING.capture_content))
            try:
                if tool.kind == "mcp":
                    with span.outgoing():
                        text = await self._mcp(tool, arguments_object(call.arguments))
                elif tool.kind == "skill":
                    arguments, config = arguments_object(call.arguments), self.context.config
                    text = await run_skill_tool(tool.name, tool.skills, config, arguments)
                elif tool.kind == "task":
                    context = self.context
                    text = await run_task_tool(
                        tool.name,
                        arguments_object(call.arguments),
                        context.config,
                        context.user_id,
                        tool.agent,
                        context.engine.tasks,
                    )
                else:
                    text, usage = await self._subagent(tool.name, call.arguments, span)
            except ToolFailed as failure:
                text = f"Error: {failure}"
                usage = failure.usage
                span.fail("tool_failed")
            if TRACING.capture_content and span.recording:
                span.set(tool_result_attributes(text))
        return Message(role="tool", content=text, tool_call_id=call.id, name=call.name), usage

    async def _mcp(self, tool: AgentTool, arguments: dict[str, Any]) -> str:
        context = self.context
        signing_in = context.engine.mcp.user_server(tool.server)
        if signing_in is not None:
            return await signing_in.call(tool.name, arguments, context.user_id, context.config)
        server = context.engine.mcp.server(tool.server)
        if server is None:
            raise ToolFailed(f"MCP server '{tool.server}' is not configured any more")
        return await server.call(tool.name, arguments)

    async def _subagent(self, name: str, arguments: str, parent: Span) -> tuple[str, Usage]:
        context = self.context
        if context.depth >= MAX_SUBAGENT_DEPTH:
            raise ToolFailed(
                f"subagent '{name}' was not called: subagents may nest at most "
                f"{MAX_SUBAGENT_DEPTH} levels deep"
            )
        message = _message_argument(arguments)
        agent = await resolve_subagent(context, name)
        with parent.child(f"invoke_agent {agent.name}") as span:
            if span.recording:
                span.set(agent_attributes(agent.name, name, context.user_id))
            deeper = replace(context, depth=context.depth + 1, span=span)
            return await self._converse(name, agent, message, deeper)

    async def _converse(
        self, name: str, agent: AgentConfig, message: str, deeper: CallContext
    ) -> tuple[str, Usage]:
        """A subagent's conversation, one level deeper."""
        context = self.context
        route = route_of(agent)
        try:
            toolbox = await build_toolbox(
                agent,
                context.config,
                context.engine.mcp,
                (),
                route.tool_names(context.config),
                context.user_id,
            )
        except ApiError as error:
            raise ToolFailed(f"subagent '{name}' cannot run: {error.message}") from error
        parts = (agent.preamble, skills_prompt(agent, context.config))
        request = ChatRequest(
            model=agent.model,
            system="\n\n".join(part for part in parts if part.strip()),
            messages=(Message(role="user", content=message),),
            tools=toolbox.specs,
        )
        loop = tool_loop(deeper, route, toolbox, agent=agent)
        try:
            answer = await loop.complete(request)
        except TurnStopped:
            raise  # the whole turn ends, not only this subagent's call
        except ProviderError as error:
            deeper.span.fail(error.code)
            raise ToolFailed(f"subagent '{name}' failed: {error.message}", error.usage) from error
        deeper.span.set(usage_attributes(loop.spent))
        return answer.text, loop.spent


async def resolve_subagent(context: CallContext, name: str) -> AgentConfig:
    """The agent behind a subagent name: an agent, or an experiment's variant for the user
    (a shadow experiment's primary)."""
    arms = await in_database(bandit_arms, context.config, name, timezone.now())
    try:
        return route(context.config, name, context.user_id, arms, context.engine.rng).agent
    except ApiError as error:
        raise ToolFailed(error.message) from error


def _message_argument(arguments: str) -> str:
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        value = None
    message = value.get("message") if isinstance(value, dict) else None
    if not isinstance(message, str):
        raise ToolFailed('a subagent takes one argument: {"message": "<what to ask>"}')
    return message
