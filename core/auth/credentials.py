"""Who a request's ``Authorization`` header says it is, for ``/v1`` and the admin alike.

``basic``: the Basic pair against the configured one (``core.auth.basicauth``). ``oidc``:
``Bearer <JWT>`` signed by the issuer for the client (``core.auth.oidc``). The principal is the
Basic username or the token's ``sub``. What a missing or wrong credential means (a 401
with a challenge, a login page, a session instead) is each surface's own business.
"""

from typing import Protocol

from core.auth.basicauth import BasicVerifier, basic_credentials
from core.auth.oidc import provider_for


class BasicPair(Protocol):
    @property
    def username(self) -> str: ...
    @property
    def password(self) -> str: ...


class OidcClient(Protocol):
    @property
    def issuer_url(self) -> str: ...
    @property
    def client_id(self) -> str: ...


class Scheme(Protocol):
    """Exactly one of the two is set (the config's ``auth.proxy`` or ``auth.admin``)."""

    @property
    def basic(self) -> BasicPair | None: ...
    @property
    def oidc(self) -> OidcClient | None: ...


_basic = BasicVerifier()


async def principal(authorization: str | None, scheme: Scheme) -> str | None:
    """The principal, or None without a valid credential of the scheme. A bearer token the
    issuer refuses raises ``core.auth.oidc.InvalidToken``; an issuer that cannot be reached
    raises ``core.auth.oidc.ProviderUnavailable``."""
    if scheme.basic is not None:
        credentials = basic_credentials(authorization)
        expected = (scheme.basic.username, scheme.basic.password)
        if credentials is not None and await _basic.verify(*credentials, expected):
            return credentials[0]
        return None
    if scheme.oidc is None:
        return None  # only API keys (inference.serving.auth), which are not this module's
    kind, _, token = (authorization or "").partition(" ")
    if kind.lower() != "bearer" or not token.strip():
        return None
    claims = await provider_for(scheme.oidc.issuer_url).verify(token.strip(), scheme.oidc.client_id)
    return str(claims["sub"])
