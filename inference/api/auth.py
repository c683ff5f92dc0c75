"""``auth.proxy``: who may call ``/v1``.

The principal comes from ``core.auth.credentials``; here a missing or refused credential
becomes an ``ApiError``: 401 with the challenge of the configured scheme, or 503 when the
identity provider cannot be reached to check a token.
"""

from agents.schema import AuthScope
from core.auth.credentials import principal
from core.auth.oidc import InvalidToken, ProviderUnavailable
from inference.errors import ApiError

_BASIC_CHALLENGE = 'Basic realm="gateway", charset="UTF-8"'
_BEARER_CHALLENGE = 'Bearer realm="gateway"'


async def authenticate(authorization: str | None, scope: AuthScope) -> str:
    """The principal of a request to ``/v1`` under ``auth.proxy``, else ``ApiError``."""
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
