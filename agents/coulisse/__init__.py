"""Coulisse's own config shapes, read as the gateway's (docs/configuration.md, "Coulisse's
keys").

Coulisse, the service whose format the gateway adopted, grew keys after v0.1.0:
``memory.user_state``, MCP servers without ``transport``, triggers as ``{type, schedule,
prompt}``, smoke tests with an inline persona, ``vars``, ``auth.proxy.identity``, nested
``telemetry``, ``server`` and ``storage``. ``translate`` rewrites the parsed data into
the gateway's own keys before validation: the file keeps its shape (admin writes keep
it too) and the rest of the gateway knows one shape. Where an entry holds both, the
gateway's own key wins. Keys accepted without effect are warned.
"""

import copy
import re
from typing import Any

from agents.coulisse import automation, memory, sections
from agents.coulisse.data import lookup
from agents.schema import ConfigWarning

_UNUSED = {
    "server.worker_threads": "the gateway's processes are set by serve --workers",
    "sidecars": "the gateway starts no sidecar processes",
    "auth.mcp_admin": "the gateway's admin is not served over MCP",
    "telemetry.fmt": "the gateway always logs JSON lines to stderr",
}

# Coulisse's keys the translation reads and leaves in place (inside sections the gateway
# knows): not typos, so not named among the unknown keys. ``[]`` stands for any index.
_READ = frozenset(
    {
        "auth.proxy.identity",
        "auth.admin.identity",
        "server.max_body_bytes",
        "smoke_tests[].target",
        "smoke_tests[].initial_message",
        "smoke_tests[].max_turns",
        "telemetry.otlp",
        "telemetry.sqlite",
        "triggers[].type",
        "triggers[].prompt",
        "triggers[].secret",
    }
)
_INDEX = re.compile(r"\[\d+\]")


def reads(path: str) -> bool:
    """Whether ``path`` (``triggers[2].prompt``) is a key of Coulisse's that the
    translation reads or warns of."""
    return _INDEX.sub("[]", path) in _READ or path in _UNUSED


def translate(
    data: dict[str, Any], problems: list[str]
) -> tuple[dict[str, Any], list[ConfigWarning]]:
    """``data`` with Coulisse's keys rewritten as the gateway's, and the warnings of the
    keys kept without effect; what cannot be read is added to ``problems``."""
    data = copy.deepcopy(data)
    warnings: list[ConfigWarning] = []
    data = sections.substitute_vars(data, problems)
    memory.memory_for_all(data, problems, warnings)
    sections.mcp(data, warnings)
    automation.triggers(data, problems, warnings)
    automation.smoke_tests(data)
    sections.identity(data, problems)
    sections.telemetry(data, warnings)
    sections.server(data)
    sections.storage(data, problems)
    warnings += [
        ConfigWarning(path, f"accepted without effect: {why}")
        for path, why in _UNUSED.items()
        if lookup(data, path) is not None
    ]
    return data, warnings
