"""The Messages dialect's record: Anthropic's error shape, and its SDKs' ``x-api-key``
taken as a bearer token; its Message Batches' routes (``batches``) are not live traffic."""

from typing import Any

from inference.dialects.messages import batches
from inference.dialects.messages.batch import LINES
from inference.dialects.messages.errors import anthropic_error
from inference.dialects.messages.routes import api
from inference.serving.auth import Credential, header
from inference.serving.dialect import Dialect, bearer


def _credentials(scope: dict[str, Any]) -> Credential | None:
    if (authorization := bearer(scope)) is not None:
        return authorization
    key = header(scope, b"x-api-key")
    return Credential(f"Bearer {key}", "the x-api-key header") if key is not None else None


DIALECT = Dialect(
    "messages",
    ("/v1/messages",),
    api,
    anthropic_error,
    _credentials,
    background=(batches.PREFIX,),
    batch_lines=LINES,
)
