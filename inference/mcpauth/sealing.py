"""Sealing what the gateway keeps of users' MCP accounts: their tokens, its client
registrations, and the state of a sign-in on its way through the browser.

Fernet (AES-128-CBC with an HMAC-SHA256, and a timestamp) under keys derived from
``GATEWAY_SECRET_KEY`` with HKDF, one key per purpose: a sealed value of one purpose does
not open as another's, and the database alone opens nothing. Changing the secret key
leaves what was sealed unreadable: users connect their accounts again.
"""

import base64
import functools
import json
from typing import Any, Literal

from cryptography.fernet import Fernet, InvalidToken
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from django.conf import settings

type Purpose = Literal["tokens", "registration", "sign-in"]


def seal(purpose: Purpose, value: dict[str, Any]) -> str:
    return _fernet(settings.SECRET_KEY, purpose).encrypt(json.dumps(value).encode()).decode()


def unseal(purpose: Purpose, sealed: str, max_age: int | None = None) -> dict[str, Any] | None:
    """The value, or None when it was not sealed for ``purpose`` under this secret key, or
    was sealed over ``max_age`` seconds ago."""
    try:
        opened = _fernet(settings.SECRET_KEY, purpose).decrypt(sealed.encode(), ttl=max_age)
    except (InvalidToken, ValueError):
        return None
    value = json.loads(opened)
    return value if isinstance(value, dict) else None


@functools.cache
def _fernet(secret: str, purpose: Purpose) -> Fernet:
    derived = HKDF(
        algorithm=hashes.SHA256(), length=32, salt=None, info=f"gateway mcp {purpose}".encode()
    ).derive(secret.encode())
    return Fernet(base64.urlsafe_b64encode(derived))
