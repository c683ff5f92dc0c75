"""The Gemini dialect's record: everything under ``/v1beta``, and the methods Google also
serves under ``/v1/models/{model}:…``; Google's error shape; the key as
``x-goog-api-key``, ``?key=`` or a bearer token."""

import re
from typing import Any
from urllib.parse import parse_qs

from inference.dialects.gemini.errors import google_error
from inference.dialects.gemini.routes import METHODS, api
from inference.serving.auth import Credential, header
from inference.serving.dialect import Dialect, bearer


def _credentials(scope: dict[str, Any]) -> Credential | None:
    if (authorization := bearer(scope)) is not None:
        return authorization
    if key := header(scope, b"x-goog-api-key"):
        return Credential(f"Bearer {key}", "the x-goog-api-key header")
    query = parse_qs(scope.get("query_string", b"").decode("latin-1"))
    if key := next(iter(query.get("key", [])), None):
        return Credential(f"Bearer {key}", "the key parameter")
    return None


DIALECT = Dialect(
    "gemini",
    ("/v1beta",),
    api,
    google_error,
    _credentials,
    re.compile(rf"/v1/models/[^/]+:({'|'.join(METHODS)})"),
    secret_params=("key",),
)
