"""The rest of Coulisse's sections: MCP servers' shapes, ``vars``, ``auth.*.identity``,
nested ``telemetry``, ``server`` and ``storage``."""

import re
from typing import Any
from urllib.parse import urlsplit

from agents.coulisse.data import mapping, strings
from agents.schema import ConfigWarning

_VAR = re.compile(r"\$\{vars\.([A-Za-z_][A-Za-z0-9_]*)\}")
_MIB = 1024 * 1024


def substitute_vars(data: dict[str, Any], problems: list[str]) -> dict[str, Any]:
    """``${vars.name}`` in any string is ``vars.name``'s text."""
    declared = data.get("vars", {})
    if not isinstance(declared, dict):
        problems.append("vars: must be a mapping of names to text")
        declared = {}
    values = {str(name): str(value) for name, value in declared.items()}

    def change(text: str, path: str) -> str:
        def value_of(match: re.Match[str]) -> str:
            name = match.group(1)
            if name not in values:
                problems.append(f"{path}: ${{vars.{name}}} is not defined under vars")
                return match.group(0)
            return values[name]

        return _VAR.sub(value_of, text)

    rest = {key: value for key, value in data.items() if key != "vars"}
    return {**strings(rest, "", change), **({"vars": declared} if "vars" in data else {})}


def mcp(data: dict[str, Any], warnings: list[ConfigWarning]) -> None:
    """A server's transport follows its shape (``command``: stdio; ``url``: Streamable
    HTTP, or SSE when its path ends in /sse); such a URL server without ``oauth`` signs
    users in when it answers 401 (``mode: when_asked``); ``oauth: false`` is no OAuth."""
    for name, server in mapping(data.get("mcp")).items():
        if not isinstance(server, dict):
            continue
        if "transport" not in server:
            if "command" in server:
                server["transport"] = "stdio"
            elif isinstance(server.get("url"), str):
                path = urlsplit(server["url"]).path.rstrip("/")
                server["transport"] = "sse" if path.endswith("/sse") else "http"
            if "url" in server and "oauth" not in server:
                server["oauth"] = {"mode": "when_asked"}
                if not data.get("public_base_url"):
                    warnings.append(
                        ConfigWarning(f"mcp.{name}", "without public_base_url, users cannot "
                                      "be signed in should the server ask (its 401)")
                    )  # fmt: skip
        if server.get("oauth") is False:
            del server["oauth"]


def identity(data: dict[str, Any], problems: list[str]) -> None:
    """``identity: from_credential`` is ``bind_user: true``."""
    for scope_name in ("proxy", "admin"):
        scope = mapping(mapping(data.get("auth")).get(scope_name))
        identity = scope.get("identity")
        if identity is None:
            continue
        where = f"auth.{scope_name}.identity"
        if identity not in ("from_credential", "from_request"):
            problems.append(f"{where}: must be from_credential or from_request, got {identity!r}")
        elif scope_name == "admin" and identity == "from_credential":
            problems.append(f"{where}: from_credential is for auth.proxy only")
        elif identity == "from_credential":
            scope.setdefault("bind_user", True)


def telemetry(data: dict[str, Any], warnings: list[ConfigWarning]) -> None:
    """``otlp: {endpoint, headers, service_name, protocol}`` and ``sqlite.enabled`` (the
    built-in trace store)."""
    telemetry = data.get("telemetry")
    if not isinstance(telemetry, dict):
        return
    otlp = telemetry.get("otlp")
    if isinstance(otlp, dict):
        if "endpoint" in otlp:
            telemetry.setdefault("otlp_endpoint", otlp["endpoint"])
        if "headers" in otlp:
            telemetry.setdefault("headers", otlp["headers"])
        if "service_name" in otlp:
            telemetry.setdefault("service_name", otlp["service_name"])
        if otlp.get("protocol") == "grpc":
            warnings.append(
                ConfigWarning("telemetry.otlp.protocol", "grpc is not served here: spans are "
                              "sent over OTLP/HTTP to <endpoint>/v1/traces (a collector's "
                              "HTTP port is 4318)")
            )  # fmt: skip
    sqlite = telemetry.get("sqlite")
    if isinstance(sqlite, dict) and "enabled" in sqlite:
        telemetry.setdefault("store", sqlite["enabled"])


def server(data: dict[str, Any]) -> None:
    """``server.max_body_bytes`` is ``limits.max_body_mb`` (``bind`` and ``port`` are
    serve's defaults, read by the command)."""
    server = mapping(data.get("server"))
    size = server.get("max_body_bytes")
    if isinstance(size, int | float) and not isinstance(size, bool):
        limits = data.setdefault("limits", {})
        if isinstance(limits, dict):
            limits.setdefault("max_body_mb", size / _MIB)


def storage(data: dict[str, Any], problems: list[str]) -> None:
    """``storage: {backend: local, max_file_bytes, max_total_bytes}`` is ``files`` (``s3``
    is refused)."""
    storage = data.get("storage")
    if not isinstance(storage, dict):
        return
    backend = storage.get("backend", "local")
    if backend != "local":
        problems.append(
            f"storage.backend: {backend!r} is not served here; files are kept on the local "
            "file system (files.dir)"
        )
    for coulisse_key, ours in (
        ("max_file_bytes", "max_file_mb"),
        ("max_total_bytes", "max_total_mb"),
    ):
        size = storage.get(coulisse_key)
        if isinstance(size, int | float) and not isinstance(size, bool):
            files = data.setdefault("files", {})
            if isinstance(files, dict):
                files.setdefault(ours, size / _MIB)
