"""A dialect: one inbound API (OpenAI chat completions, Responses, Anthropic Messages,
embeddings), as the rest of the serving path sees it.

Each dialect folder (``inference.dialects``) makes one ``Dialect`` record: the URL paths
it owns, its routes, how it reads credentials and how it renders an error. The registry
(``inference.dialects.registry``) is what the middleware, the credential gate and the
error mapping consult; nothing else knows a dialect's paths.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qsl, urlencode

from django.http import HttpResponse
from ninja import NinjaAPI

from inference.neutral.errors import ApiError
from inference.serving.auth import Credential, header
from inference.serving.batchline import BatchLines
from inference.serving.errors import ErrorShape, error_response

# How a dialect finds the credential of a request in its ASGI scope, as an
# ``Authorization`` value (a key sent in a header of the dialect's own is a bearer token).
type Credentials = Callable[[dict[str, Any]], Credential | None]


def bearer(scope: dict[str, Any]) -> Credential | None:
    """The ``Authorization`` header, as OpenAI's SDKs send it."""
    authorization = header(scope, b"authorization")
    return Credential(authorization) if authorization is not None else None


@dataclass(frozen=True, eq=False)
class Dialect:
    name: str
    prefixes: tuple[str, ...]  # the paths it owns: each prefix itself, and what is below it
    api: NinjaAPI  # its routes, mounted at the root: their paths are whole
    error_shape: ErrorShape
    credentials: Credentials = bearer
    # Paths it owns one by one, under another dialect's prefix (Gemini's /v1/models/…:).
    paths: re.Pattern[str] | None = None
    # Its bodies are uploads (multipart files): limited by files.max_file_mb, not parsed
    # as JSON.
    uploads: bool = False
    # Query parameters that carry a credential (Gemini's ?key=): taken out of the URL once
    # the credential is read, before anything logs, records or traces it.
    secret_params: tuple[str, ...] = ()
    # Its paths whose requests are not live traffic (which batch lines give way to):
    # uploads, batches' own routes (a prefix each).
    background: tuple[str, ...] = ()
    # What it answers as a batch's line (None: batches do not run its requests).
    batch_lines: BatchLines | None = None

    def claim(self, path: str) -> int:
        """How long the longest of its prefixes that owns ``path`` is (-1: none does); a
        path it owns by its pattern is claimed whole."""
        if self.paths is not None and self.paths.fullmatch(path):
            return len(path)
        return max(
            (
                len(prefix)
                for prefix in self.prefixes
                if path == prefix or path.startswith(prefix + "/")
            ),
            default=-1,
        )

    def live(self, path: str) -> bool:
        """Whether a POST to ``path`` is live traffic (batch lines give way to it)."""
        return not any(
            path == prefix or path.startswith(prefix + "/") for prefix in self.background
        )

    def error_response(self, error: ApiError) -> HttpResponse:
        return error_response(error, self.error_shape)

    def without_secrets(self, query: str) -> str:
        """``query`` (a URL's, after ``?``) without the credentials it carries."""
        if not self.secret_params or not query:
            return query
        pairs = parse_qsl(query, keep_blank_values=True)
        return urlencode([(name, value) for name, value in pairs if name not in self.secret_params])
