"""The tools of one conversation with an agent (docs/api.md, "Tools").

The agent's own tools (its MCP servers' tools first, then its subagents, then the two
tools of its skills, then the two of its background tasks) are run by the gateway; the client's tools are returned to the
client. All of them reach the model under names its provider accepts; the toolbox
translates between those names and the tools they stand for.
"""

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Literal

from agents.schema import AgentConfig, Config, McpToolsRef
from inference.neutral.errors import ApiError, invalid_request
from inference.neutral.types import Message, ToolCall, ToolChoice, ToolSpec
from inference.providers.toolnames import ToolNameRule
from inference.tools.mcp import McpHub
from inference.tools.mcp_session import McpTool
from inference.tools.mcp_users import McpUnavailable
from inference.tools.skills import skill_specs
from inference.tools.tasks import task_specs

CONNECT_WAIT = 10.0  # seconds a request waits for an MCP server that is just starting
SUBAGENT_PARAMETERS = {
    "type": "object",
    "properties": {"message": {"type": "string", "description": "What to ask the subagent."}},
    "required": ["message"],
}


@dataclass(frozen=True)
class AgentTool:
    """A tool the gateway runs itself: an MCP server's tool, a subagent, one of the
    tools of the agent's skills, or one of its background tasks' tools."""

    kind: Literal["mcp", "subagent", "skill", "task"]
    name: str  # the MCP tool's, the subagent's or the skill tool's own name
    server: str = ""  # the MCP server, for MCP tools
    skills: tuple[str, ...] = ()  # the skills the agent lists, for skill tools
    agent: str = ""  # the agent whose tool it is, for task tools (who dispatched)


@dataclass(frozen=True)
class Toolbox:
    specs: tuple[ToolSpec, ...] = ()  # as the provider gets them
    agent_tools: Mapping[str, AgentTool] = field(default_factory=dict)  # by provider name
    client_names: Mapping[str, str] = field(default_factory=dict)  # provider name → client's

    def provider_name(self, client_name: str) -> str:
        for exposed, name in self.client_names.items():
            if name == client_name:
                return exposed
        return client_name

    def to_client(self, call: ToolCall) -> ToolCall:
        return replace(call, name=self.client_names.get(call.name, call.name))

    def to_provider(self, message: Message) -> Message:
        """A client's message with the tool names as the provider knows them."""
        if message.tool_calls:
            calls = tuple(replace(c, name=self.provider_name(c.name)) for c in message.tool_calls)
            return replace(message, tool_calls=calls)
        if message.role == "tool" and message.name is not None:
            return replace(message, name=self.provider_name(message.name))
        return message

    def choice(self, choice: ToolChoice | None) -> ToolChoice | None:
        """The client's ``tool_choice`` in provider names; ``required`` with no tool at all
        (neither the client's nor the agent's) cannot be honoured: 400, rather than an
        answer that silently ignores it."""
        if choice is not None and choice.mode == "required" and not self.specs:
            raise invalid_request(
                "tool_choice is 'required' but there is no tool to call: send tools",
                param="tool_choice",
                code="invalid_tool_choice",
            )
        if choice is None or choice.name is None:
            return choice
        return replace(choice, name=self.provider_name(choice.name))


async def build_toolbox(
    agent: AgentConfig,
    config: Config,
    mcp: McpHub,
    client_tools: tuple[ToolSpec, ...],
    names: ToolNameRule,
    user_id: str,
) -> Toolbox:
    """The tools of ``agent`` for ``user_id`` and of the client; 502 when an MCP server it
    uses is down, 400 when a client tool takes the name of one of the agent's tools."""
    own: list[tuple[ToolSpec, AgentTool]] = []
    for reference in agent.mcp_tools:
        for listed in await _mcp_tools(reference, config, mcp, user_id):
            spec = ToolSpec(listed.name, listed.description, listed.input_schema)
            own.append((spec, AgentTool("mcp", listed.name, reference.server)))
    for subagent in agent.subagents:
        description = _purpose(config, subagent) or f"Invoke the '{subagent}' subagent."
        spec = ToolSpec(subagent, description, SUBAGENT_PARAMETERS)
        own.append((spec, AgentTool("subagent", subagent)))
    skills = tuple(name for name in agent.skills if config.skill(name) is not None)
    for spec in skill_specs(skills):  # a skill no SKILL.md names was warned at load
        own.append((spec, AgentTool("skill", spec.name, skills=skills)))
    if agent.tasks:
        for spec in task_specs(config):
            own.append((spec, AgentTool("task", spec.name, agent=agent.name)))
    taken = {spec.name for spec, _ in own}
    for index, tool in enumerate(client_tools):
        if tool.name in taken:
            raise invalid_request(
                f"tools[{index}]: '{tool.name}' is the name of one of the agent's own tools "
                f"(agent '{agent.name}'); rename the client tool",
                param="tools",
                code="tool_name_taken",
            )
    specs = [spec for spec, _ in own] + list(client_tools)
    exposed = names.safe_names([spec.name for spec in specs])
    return Toolbox(
        specs=tuple(replace(spec, name=name) for spec, name in zip(specs, exposed, strict=True)),
        agent_tools={name: tool for name, (_, tool) in zip(exposed, own, strict=False)},
        client_names={
            name: tool.name for name, tool in zip(exposed[len(own) :], client_tools, strict=True)
        },
    )


async def _mcp_tools(
    reference: McpToolsRef, config: Config, mcp: McpHub, user_id: str
) -> tuple[McpTool, ...]:
    """The tools ``reference`` takes from its server: those it lists (for the user, where
    it signs each user in), or, for a user who has not connected their account there,
    what lets them connect it."""
    signing_in = mcp.user_server(reference.server)
    if signing_in is not None:
        try:
            listed = await signing_in.tools_for(user_id, config)
        except McpUnavailable as error:
            raise ApiError(502, str(error), code="mcp_unavailable") from error
        if listed is None:
            return signing_in.before_connecting(reference.only)
    else:
        server = mcp.server(reference.server)
        if server is not None and server.state == "connecting":
            await server.settled(CONNECT_WAIT)  # just started: give it a moment
        if server is None or server.state != "connected":
            message = (
                server.unavailable()
                if server
                else f"MCP server '{reference.server}' is not started"
            )
            raise ApiError(502, message, code="mcp_unavailable")
        listed = server.tools
    return tuple(tool for tool in listed if reference.only is None or tool.name in reference.only)


def _purpose(config: Config, name: str) -> str | None:
    callee = config.agent(name) or config.experiment(name)
    return callee.purpose if callee is not None else None
