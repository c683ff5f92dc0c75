"""What the gateway offers an MCP client (docs/mcp.md): ``ask_<agent>`` for every agent
the caller may use (a whole turn of that agent for the caller's user) and, with
``mcp_server.expose_tools``, the tools of the MCP servers those agents use, as
``<server>__<tool>`` (each server's ``only`` honoured). Tool names are the ones MCP
clients accept (letters, digits, ``_`` and ``-``, at most 64)."""

from dataclasses import dataclass
from typing import Any, Literal

from agents.schema import AgentConfig, Config
from inference.money.keys import KeyGrant
from inference.providers.toolnames import LETTERS_DIGITS_DASHES
from inference.tools.mcp import McpHub

ASK_INPUT = {
    "type": "object",
    "properties": {"message": {"type": "string", "description": "What to ask the agent."}},
    "required": ["message"],
}


@dataclass(frozen=True)
class Offered:
    """One tool of the gateway's: an agent to ask, or a tool of an MCP server."""

    kind: Literal["ask", "tool"]
    name: str  # as the client sees it
    description: str
    input_schema: dict[str, Any]
    target: str  # the agent, or the MCP server
    tool: str = ""  # the MCP server's own name of the tool


def offered_tools(config: Config, key: KeyGrant | None, mcp: McpHub) -> dict[str, Offered]:
    """The caller's tools by the names the client sees, in the config's order."""
    agents = [agent for agent in config.agents if key is None or key.allows(agent.name)]
    offered = [_ask(agent) for agent in agents]
    if config.mcp_server.expose_tools:
        seen: set[tuple[str, str]] = set()
        for agent in agents:
            for reference in agent.mcp_tools:
                server = mcp.server(reference.server)
                if server is None:
                    continue
                for listed in server.tools:
                    kept = reference.only is None or listed.name in reference.only
                    if kept and (reference.server, listed.name) not in seen:
                        seen.add((reference.server, listed.name))
                        offered.append(
                            Offered(
                                "tool",
                                f"{reference.server}__{listed.name}",
                                listed.description,
                                listed.input_schema,
                                reference.server,
                                listed.name,
                            )
                        )
    names = LETTERS_DIGITS_DASHES.safe_names([item.name for item in offered])
    return {
        name: Offered(item.kind, name, item.description, item.input_schema, item.target, item.tool)
        for name, item in zip(names, offered, strict=True)
    }


def _ask(agent: AgentConfig) -> Offered:
    description = agent.purpose or f"Ask the '{agent.name}' agent; it answers in text."
    return Offered("ask", f"ask_{agent.name}", description, ASK_INPUT, agent.name)
