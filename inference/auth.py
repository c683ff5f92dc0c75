"""``auth.proxy``: who may call ``/v1`` (DESIGN 5).

Basic credentials are checked here; the password in the config is plain text or a
Django password hash. OIDC bearer tokens cannot be verified yet, so a configured
``oidc`` scope refuses every request rather than leave ``/v1`` open.
"""

import base64
import binascii
import hmac
from functools import lru_cache

from asgiref.sync import sync_to_async
from django.contrib.auth.hashers import check_password, identify_hasher

from agents.schema import AuthConfig, BasicAuth
from inference.errors import ApiError

_CHALLENGE = {"WWW-Authenticate": 'Basic realm="gateway", charset="UTF-8"'}


async def check_proxy_auth(authorization: str | None, auth: AuthConfig | None) -> None:
    scope = auth.proxy if auth is not None else None
    if scope is None:
        return
    if scope.basic is None:
        raise ApiError(
            401,
            "auth.proxy.oidc is configured, and this gateway cannot verify OIDC tokens yet: "
            "requests are refused rather than served without authentication",
            code="auth_unavailable",
            error_type="authentication_error",
        )
    credentials = _basic_credentials(authorization)
    if credentials is None or not await _matches(scope.basic, *credentials):
        raise ApiError(
            401,
            "Valid Basic credentials are required (auth.proxy is configured)",
            code="invalid_credentials",
            error_type="authentication_error",
            headers=_CHALLENGE,
        )


def _basic_credentials(authorization: str | None) -> tuple[str, str] | None:
    scheme, _, encoded = (authorization or "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (binascii.Error, UnicodeDecodeError):
        return None
    username, colon, password = decoded.partition(":")
    return (username, password) if colon else None


async def _matches(expected: BasicAuth, username: str, password: str) -> bool:
    user_ok = hmac.compare_digest(username.encode(), expected.username.encode())
    if _is_hash(expected.password):
        # Hashing is deliberately slow: keep it off the event loop.
        password_ok = await sync_to_async(_hash_matches, thread_sensitive=False)(
            expected.password, password
        )
    else:
        password_ok = hmac.compare_digest(password.encode(), expected.password.encode())
    return user_ok and password_ok


def _is_hash(password: str) -> bool:
    try:
        identify_hasher(password)
    except ValueError:
        return False
    return True


@lru_cache(maxsize=256)
def _hash_matches(stored: str, presented: str) -> bool:
    """Cached, so the slow hash runs once per credential rather than once per request."""
    return check_password(presented, stored)
