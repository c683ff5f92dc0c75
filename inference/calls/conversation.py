"""A conversation with a model for a caller, and the agent's own tools it runs: an MCP
server's tool, a subagent, a skill's tool, one of the tools of background tasks.

The work a conversation belongs to (a turn, with every subagent level; a judge's
verdict) shares one allowance of upstream calls (``inference.tools.bounds``), one meter
of what it spends (``inference.money.meter``) and one recorder of what its calls did
(``inference.calls.recorder``). A subagent answers in a fresh conversation under its own
preamble and tools, one level deeper, as the same caller; an agent at
``MAX_SUBAGENT_DEPTH`` has its subagent calls refused. Whatever goes wrong in a tool is
reported to the model as the tool's result, never to the client.
"""

import json
from dataclasses import dataclass, field, replace
from typing import Any, Protocol

from django.utils import timezone

from agents.schema import AgentConfig, Config
from inference.cache.calls import CacheEngine
from inference.cache.use import CacheControl
from inference.calls.factory import model_calls
from inference.calls.recorder import CallRecorder
from inference.database import in_database
from inference.guardrails.classifying import Classifying
from inference.money.caller import Caller
from inference.money.meter import Meter
from inference.neutral.errors import ApiError
from inference.neutral.types import ChatRequest, Message, ResponseFormat, ToolCall, arguments_object
from inference.providers.base import ProviderError, TurnStopped
from inference.routing.deployments import Route, route_of
from inference.routing.experiments import bandit_arms, route
from inference.telemetry.genai import (
    agent_attributes,
    tool_attributes,
    tool_result_attributes,
    usage_attributes,
)
from inference.telemetry.names import agent_span, tool_span
from inference.telemetry.spans import Span
from inference.telemetry.tracing import TRACING
from inference.tools.bounds import CallAllowance
from inference.tools.failure import ToolFailed
from inference.tools.loop import MAX_TOOL_ROUNDS, ToolLoop
from inference.tools.mcp import McpHub
from inference.tools.signal import TaskSignal
from inference.tools.skills import run_skill_tool, skills_prompt
from inference.tools.tasks import Dispatches, run_task_tool
from inference.tools.toolbox import AgentTool, Toolbox, build_toolbox

MAX_SUBAGENT_DEPTH = 4


class Borrowed(CacheEngine, Protocol):
    """What a conversation borrows from the process's engine (``inference.engine``)."""

    @property
    def mcp(self) -> McpHub: ...

    @property
    def tasks(self) -> TaskSignal: ...


@dataclass(frozen=True)
class Conversation:
    """A caller's conversation, at ``depth`` subagent levels below the agent its work
    began with; ``control``: what the request lets the response cache do (None: its
    calls never use it: a judge's, a shadow's, a replay's)."""

    config: Config
    engine: Borrowed
    caller: Caller
    allowance: CallAllowance
    meter: Meter
    recorder: CallRecorder = field(default_factory=CallRecorder)
    dispatches: Dispatches = field(default_factory=Dispatches)
    control: CacheControl | None = None
    depth: int = 0
    classifying: Classifying | None = None  # who asks the judges of its guardrails

    def loop(
        self,
        route: Route,
        toolbox: Toolbox,
        response_format: ResponseFormat | None = None,
        agent: AgentConfig | None = None,
    ) -> ToolLoop:
        """The loop of this conversation with ``agent`` (its cache), through ``route``."""
        calls = model_calls(
            self.caller,
            route,
            self.config,
            self.engine,
            self.allowance,
            self.meter,
            self.recorder,
            agent=agent,
            control=self.control,
            answering=self.depth == 0,
            classifying=self.classifying,
        )
        return ToolLoop(
            calls,
            toolbox,
            ToolRunner(self, toolbox).run,
            response_format,
            self.config.structured_output.max_repairs,
            allowance=self.allowance,
            max_rounds=_max_rounds(agent),
        )


def _max_rounds(agent: AgentConfig | None) -> int:
    """The agent's ``max_turns``: the tool rounds one of its turns may make."""
    if agent is None or agent.max_turns is None:
        return MAX_TOOL_ROUNDS
    return agent.max_turns


class ToolRunner:
    def __init__(self, conversation: Conversation, toolbox: Toolbox) -> None:
        self.conversation = conversation
        self.toolbox = toolbox

    async def run(self, call: ToolCall) -> Message:
        tool = self.toolbox.agent_tools[call.name]
        conversation = self.conversation
        with tool_span(conversation.caller.span, tool.name) as span:
            if span.recording:
                span.set(tool_attributes(tool.name, tool.kind, call, TRACING.capture_content))
            try:
                text = await self._run(tool, call, span)
            except ToolFailed as failure:
                text = f"Error: {failure.message}"
                span.fail("tool_failed")
            if TRACING.capture_content and span.recording:
                span.set(tool_result_attributes(text))
        return Message(role="tool", content=text, tool_call_id=call.id, name=call.name)

    async def _run(self, tool: AgentTool, call: ToolCall, span: Span) -> str:
        conversation = self.conversation
        config, engine, caller = conversation.config, conversation.engine, conversation.caller
        if tool.kind == "subagent":
            return await self._subagent(tool.name, call.arguments, span)
        arguments = arguments_object(call.arguments)
        if tool.kind == "skill":
            return await run_skill_tool(tool.name, tool.skills, config, arguments)
        if tool.kind == "task":
            return await run_task_tool(
                tool.name,
                arguments,
                config,
                caller,
                tool.agent,
                engine.tasks,
                conversation.dispatches,
            )
        with span.outgoing():
            return await self._mcp(tool, arguments)

    async def _mcp(self, tool: AgentTool, arguments: dict[str, Any]) -> str:
        conversation = self.conversation
        engine = conversation.engine
        signing_in = engine.mcp.user_server(tool.server)
        if signing_in is not None:
            user_id = conversation.caller.user_id
            return await signing_in.call(tool.name, arguments, user_id, conversation.config)
        server = engine.mcp.server(tool.server)
        if server is None:
            raise ToolFailed(f"MCP server '{tool.server}' is not configured any more")
        return await server.call(tool.name, arguments)

    async def _subagent(self, name: str, arguments: str, parent: Span) -> str:
        conversation = self.conversation
        if conversation.depth >= MAX_SUBAGENT_DEPTH:
            raise ToolFailed(
                f"subagent '{name}' was not called: subagents may nest at most "
                f"{MAX_SUBAGENT_DEPTH} levels deep"
            )
        message = _message_argument(arguments)
        agent = await resolve_subagent(conversation, name)
        caller = conversation.caller
        with agent_span(parent, agent.name) as span:
            if span.recording:
                span.set(agent_attributes(agent.name, name, caller.user_id))
            deeper = replace(conversation, caller=caller.traced(span), depth=conversation.depth + 1)
            return await _converse(name, agent, message, deeper)


async def _converse(name: str, agent: AgentConfig, message: str, deeper: Conversation) -> str:
    """A subagent's conversation, one level deeper: its final text."""
    config, caller = deeper.config, deeper.caller
    route = route_of(agent)
    try:
        toolbox = await build_toolbox(
            agent, config, deeper.engine.mcp, (), route.tool_names(config), caller.user_id
        )
    except ApiError as error:
        raise ToolFailed(f"subagent '{name}' cannot run: {error.message}") from error
    parts = (agent.preamble, skills_prompt(agent, config))
    request = ChatRequest(
        model=agent.model,
        system="\n\n".join(part for part in parts if part.strip()),
        messages=(Message(role="user", content=message),),
        tools=toolbox.specs,
    )
    loop = deeper.loop(route, toolbox, agent=agent)
    try:
        answer = await loop.complete(request)
    except TurnStopped:
        raise  # the whole turn ends, not only this subagent's call
    except ProviderError as error:
        caller.span.fail(error.code)
        raise ToolFailed(f"subagent '{name}' failed: {error.message}") from error
    caller.span.set(usage_attributes(loop.spent))
    return answer.text


async def resolve_subagent(conversation: Conversation, name: str) -> AgentConfig:
    """The agent behind a subagent name: an agent, or an experiment's variant for the user
    (a shadow experiment's primary)."""
    config, engine = conversation.config, conversation.engine
    arms = await in_database(bandit_arms, config, name, timezone.now())
    try:
        return route(config, name, conversation.caller.user_id, arms, engine.rng).agent
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
