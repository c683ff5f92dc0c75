"""``auth.proxy``: who may call the API (every dialect).

A bearer ``sk-gw-…`` is a minted API key when ``auth.proxy.api_keys`` is on: its user is
the principal. Anything else goes to Basic or OIDC (``core.auth.credentials``). A missing
or refused credential becomes an ``ApiError``: 401 with the challenge of the configured
scheme, or 503 when the identity provider cannot be reached to check a token.
"""

import time
from dataclasses import dataclass
from typing import Any

from django.utils import timezone

from agents.schema import AuthScope
from core.auth.credentials import principal
from core.auth.oidc import InvalidToken, ProviderUnavailable
from inference.database import in_database
from inference.money.keys import PREFIX, KeyGrant, digest_of, grant_for
from inference.neutral.errors import ApiError

# How long a key's record is trusted without asking the database again: a revoked key
# is refused by every process within this many seconds.
KEY_RECHECK_SECONDS = 1.0
_MAX_REMEMBERED_KEYS = 10_000


class KeyCache:
    """Each key's grant (or refusal), as the database said it less than
    ``KEY_RECHECK_SECONDS`` ago: a burst of requests with one key costs one query."""

    def __init__(self) -> None:
        self._seen: dict[str, tuple[KeyGrant | None, float]] = {}

    async def grant(self, secret: str) -> KeyGrant | None:
        digest = digest_of(secret)
        now = time.monotonic()
        seen = self._seen.get(digest)
        if seen is not None and now - seen[1] < KEY_RECHECK_SECONDS:
            return seen[0]
        found = await in_database(grant_for, digest, timezone.now())
        if len(self._seen) >= _MAX_REMEMBERED_KEYS:
            self._seen.clear()  # a flood of made-up keys must not grow memory
        self._seen[digest] = (found, now)
        return found


@dataclass(frozen=True)
class Credential:
    """A request's credential as an ``Authorization`` value, and where the dialect read
    it (``the x-api-key header``), for a refusal to name."""

    authorization: str
    source: str = "the Authorization header"


@dataclass(frozen=True)
class Caller:
    """Who is calling: the principal, and the API key it came with (if any)."""

    principal: str
    key: KeyGrant | None = None


async def authenticate_caller(
    credential: Credential | None, scope: AuthScope, keys: KeyCache
) -> Caller:
    """The caller of an API request under ``auth.proxy``, else ``ApiError``.
    ``credential``: what the dialect found."""
    authorization = credential.authorization if credential is not None else None
    if scope.takes_api_keys:
        kind, _, token = (authorization or "").partition(" ")
        token = token.strip()
        if kind.lower() == "bearer" and token.startswith(PREFIX):
            grant = await keys.grant(token)
            if grant is None:
                raise _invalid_key("The API key is not valid (unknown, revoked or expired)")
            return Caller(grant.user, grant)
        if scope.basic is None and scope.oidc is None:
            raise _invalid_key(_key_required(credential))
    return Caller(await authenticate(authorization, scope))


def _key_required(credential: Credential | None) -> str:
    """What to send instead: a credential that is not a gateway key is named where it was
    read (an Anthropic key left in ``x-api-key``)."""
    if credential is None:
        return "An API key is required (Authorization: Bearer sk-gw-…)"
    return (
        f"An API key is required: {credential.source} holds a credential that is not a "
        "gateway key (sk-gw-…)"
    )


def _invalid_key(message: str) -> ApiError:
    return ApiError(
        401,
        message,
        code="invalid_api_key",
        error_type="invalid_request_error",
        headers={"WWW-Authenticate": _BEARER_CHALLENGE},
    )


_BASIC_CHALLENGE = 'Basic realm="gateway", charset="UTF-8"'
_BEARER_CHALLENGE = 'Bearer realm="gateway"'


async def authenticate(authorization: str | None, scope: AuthScope) -> str:
    """The principal of an API request under ``auth.proxy``, else ``ApiError``."""
    try:
        name = await principal(authorization, scope)
    except InvalidToken as error:
        description = str(error).replace('"', "'")
        raise ApiError(
            401,
            f"The bearer token was refused: {error}",
            code="invalid_token",
            headers={
                "WWW-Authenticate": (
                    f'{_BEARER_CHALLENGE}, error="invalid_token", error_description="{description}"'
                )
            },
        ) from error
    except ProviderUnavailable as error:
        raise ApiError(
            503,
            f"The identity provider cannot be reached to check the token: {error}",
            code="identity_provider_unavailable",
            error_type="api_error",
        ) from error
    if name is not None:
        return name
    if scope.basic is not None:
        raise ApiError(
            401,
            "Valid Basic credentials are required (auth.proxy is configured)",
            code="invalid_credentials",
            headers={"WWW-Authenticate": _BASIC_CHALLENGE},
        )
    raise ApiError(
        401,
        "A bearer token from the identity provider is required "
        "(Authorization: Bearer <JWT>; auth.proxy is configured)",
        code="invalid_credentials",
        headers={"WWW-Authenticate": _BEARER_CHALLENGE},
    )


def header(scope: dict[str, Any], name: bytes) -> str | None:
    """The value of the header ``name`` (lower case) in an ASGI scope."""
    key: bytes
    value: bytes
    for key, value in scope.get("headers", ()):
        if key.lower() == name:
            return value.decode("latin-1")
    return None
