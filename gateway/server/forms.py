"""Daphne hands request bodies to the application as they came.

Twisted's ``Request`` parses every ``POST`` form (``multipart/form-data``,
``application/x-www-form-urlencoded``) into ``request.args`` before daphne sees it:
daphne never reads those, so an upload to ``/v1/files`` was parsed twice (held in
memory twice over), and a malformed form was answered by Twisted itself, a 400 with an
empty body instead of the API's error object. Twisted takes
``parsePOSTFormSubmission=False`` for exactly this; daphne gives no way to pass it, so
its request class is replaced by one that does, before daphne builds any protocol
(``gateway.server.draining`` imports this module in the daphne process)."""

from typing import Any

from daphne import http_protocol


class UnparsedFormsRequest(http_protocol.WebRequest):  # type: ignore[misc]  # untyped
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, parsePOSTFormSubmission=False, **kwargs)


http_protocol.WebRequest = UnparsedFormsRequest
