"""``X-Gateway-Signature: sha256=<hex>``: the HMAC-SHA256 of a body's raw bytes, keyed
with a shared secret, on webhooks coming in and deliveries going out."""

import hashlib
import hmac

SIGNATURE_HEADER = "X-Gateway-Signature"


def signature(secret: str, body: bytes) -> str:
    return "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()


def verified(secret: str, body: bytes, header: str | None) -> bool:
    """Whether ``header`` is the signature of ``body`` (compared in constant time)."""
    if not secret or not header:
        return False
    return hmac.compare_digest(signature(secret, body).encode(), header.strip().encode())
