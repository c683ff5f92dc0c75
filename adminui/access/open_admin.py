"""What the open admin may not write.

Without ``auth.admin`` the admin answers any process on this machine. A config write can
make the gateway run a program (an MCP server started over stdio) or send a stored secret
to a host of the writer's choosing (a provider's ``base_url`` moved while its ``api_key``
or billing ``admin_key`` stays). Such writes need the file itself or an authenticated admin; everything else the
open admin may do.
"""

from typing import Any

_PROGRAM_FIELDS = ("transport", "command", "args", "env")


def refusal(before: Any, after: Any) -> str | None:
    """Why the open admin may not turn ``before`` into ``after`` (config data), or None."""
    for problem in (*_programs(before, after), *_moved_secrets(before, after)):
        return (
            f"{problem}: without auth.admin the admin does not write that. Edit the config "
            "file on the host, or configure auth.admin"
        )
    return None


def _section(data: Any, name: str) -> dict[str, Any]:
    value = data.get(name) if isinstance(data, dict) else None
    return value if isinstance(value, dict) else {}


def _programs(before: Any, after: Any) -> list[str]:
    """Stdio MCP servers added, or whose program or its arguments or environment changed."""
    old = _section(before, "mcp")
    found = []
    for name, server in _section(after, "mcp").items():
        if not isinstance(server, dict) or server.get("transport") != "stdio":
            continue
        previous = old.get(name)
        fields = [
            field
            for field in _PROGRAM_FIELDS
            if not isinstance(previous, dict) or previous.get(field) != server.get(field)
        ]
        if fields:
            found.append(f"mcp.{name} would run a program on this host ({', '.join(fields)})")
    return found


# The secrets a provider sends to its base_url, by where they are in its entry.
_PROVIDER_SECRETS = (("api_key",), ("billing", "admin_key"))


def _moved_secrets(before: Any, after: Any) -> list[str]:
    """Providers whose stored keys would go to another ``base_url``."""
    old = _section(before, "providers")
    found = []
    for name, provider in _section(after, "providers").items():
        previous = old.get(name)
        if not isinstance(provider, dict) or not isinstance(previous, dict):
            continue
        if provider.get("base_url") == previous.get("base_url"):
            continue
        for path in _PROVIDER_SECRETS:
            key = _at(previous, path)
            if key and _at(provider, path) == key:
                field = ".".join(path)
                found.append(
                    f"providers.{name}.base_url would send the stored {field} to another host "
                    f"(send a new {field} with the new base_url)"
                )
    return found


def _at(entry: Any, path: tuple[str, ...]) -> Any:
    for key in path:
        if not isinstance(entry, dict):
            return None
        entry = entry.get(key)
    return entry
