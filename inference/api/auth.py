"""``auth.proxy``: who may call ``/v1`` (DESIGN 4.1 and 5).

``basic``: the ``Authorization: Basic`` pair against the configured one (``core.basicauth``).
``oidc``: ``Authorization: Bearer <JWT>`` signed by the issuer for ``client_id``
(``core.oidc``). Either way the answer is the principal (the Basic username or the token's
``sub``), or an ``ApiError`` 401 with the challenge of the configured scheme.
"""

from agents.schema import AuthScope, BasicAuth, OidcAuth
from core.basicauth import BasicVerifier, basic_credentials
from core.oidc import InvalidToken, ProviderUnavailable, provider_for
from inference.errors import ApiError

_BASIC_CHALLENGE = 'Basic realm="gateway", charset="UTF-8"'
_BEARER_CHALLENGE = 'Bearer realm="gateway"'

_basic = BasicVerifier()


async def authenticate(authorization: str | None, scope: AuthScope) -> str:
    """The principal of a request to ``/v1`` under ``auth.proxy``, else ``ApiError`` 401."""
    if scope.basic is not None:
        return await _basic_principal(authorization, scope.basic)
    assert scope.oidc is not None  # validation: exactly one of basic or oidc
    return await _bearer_principal(authorization, scope.oidc)


async def _basic_principal(authorization: str | None, basic: BasicAuth) -> str:
    credentials = basic_credentials(authorization)
    if credentials is not None and await _basic.verify(
        *credentials, (basic.username, basic.password)
    ):
        return credentials[0]
    raise ApiError(
        401,
        "Valid Basic credentials are required (auth.proxy is configured)",
        code="invalid_credentials",
        headers={"WWW-Authenticate": _BASIC_CHALLENGE},
    )


async def _bearer_principal(authorization: str | None, oidc: OidcAuth) -> str:
    scheme, _, token = (authorization or "").partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise ApiError(
            401,
            "A bearer token from the identity provider is required "
            "(Authorization: Bearer <JWT>; auth.proxy is configured)",
            code="invalid_credentials",
            headers={"WWW-Authenticate": _BEARER_CHALLENGE},
        )
    try:
        claims = await provider_for(oidc.issuer_url).verify(token.strip(), oidc.client_id)
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
    return str(claims["sub"])
