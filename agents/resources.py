"""The five editable collections of the config file and where each lives in it."""

from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel

from agents.schema import (
    AgentConfig,
    ExperimentConfig,
    JudgeConfig,
    McpServerConfig,
    ProviderConfig,
)


@dataclass(frozen=True)
class Resource:
    section: str  # top-level key of the file, and the admin collection path
    schema: type[BaseModel]
    title: str  # the collection's name in headings ("MCP servers")
    singular: str
    key_field: str  # "name": inside each entry of a list, or the map's key
    is_list: bool  # a list of entries carrying their name, or a map keyed by name
    namespace: tuple[str, ...] = ()  # sections whose names must not collide with this one's
    # The field whose value names a new entry sent without a key (a provider's kind: in
    # the file, a provider's name is its kind unless it says otherwise).
    key_default: str | None = None

    def entries(self, data: dict[str, Any]) -> dict[str, dict[str, Any]]:
        """The collection's entries by key, as written in the file."""
        value = data.get(self.section) or ({} if not self.is_list else [])
        if isinstance(value, list):
            return {
                str(item.get(self.key_field)): item
                for item in value
                if isinstance(item, dict) and self.key_field in item
            }
        return {str(key): item for key, item in value.items() if isinstance(item, dict)}

    def known_fields(self) -> set[str]:
        return set(self.schema.model_fields)


AGENTS = Resource("agents", AgentConfig, "Agents", "agent", "name", True, ("agents", "experiments"))
JUDGES = Resource("judges", JudgeConfig, "Judges", "judge", "name", True, ("judges",))
EXPERIMENTS = Resource(
    "experiments",
    ExperimentConfig,
    "Experiments",
    "experiment",
    "name",
    True,
    ("agents", "experiments"),
)
PROVIDERS = Resource(
    "providers", ProviderConfig, "Providers", "provider", "name", False, ("providers",), "kind"
)
MCP = Resource("mcp", McpServerConfig, "MCP servers", "MCP server", "name", False, ("mcp",))

# In the order the admin lists them.
RESOURCES = {
    resource.section: resource for resource in (AGENTS, EXPERIMENTS, JUDGES, PROVIDERS, MCP)
}
