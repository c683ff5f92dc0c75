"""Daphne's own access log, when whoever runs daphne leaves it on (``daphne
gateway.asgi:application`` writes it to stdout): it names each request's path and query
as the client sent them, before the gateway sees the request, so a credential in the
query (Gemini's ``?key=``, ``inference.dialects.registry.without_secrets``) is taken out
of it here. The daphne command line reads its logger class before it imports the
application and builds the server after: the class is replaced in between
(``gateway.asgi`` imports this module). ``serve`` runs daphne without an access log."""

from typing import Any

from daphne import access, cli

from inference.dialects.registry import without_secrets


class CredentialFreeAccessLog(access.AccessLogGenerator):  # type: ignore[misc]  # untyped
    def __call__(self, protocol: str, action: str, details: dict[str, Any]) -> None:
        if isinstance(details.get("path"), str):
            details = {**details, "path": without_secrets(details["path"])}
        super().__call__(protocol, action, details)


cli.AccessLogGenerator = CredentialFreeAccessLog
