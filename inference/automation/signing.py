"""Signed bodies, on webhooks coming in and deliveries going out: ``X-Gateway-Timestamp``
(Unix seconds) and ``X-Gateway-Signature: sha256=<hex>``, the HMAC-SHA256 of
``<timestamp>.<raw body>`` keyed with a shared secret. The timestamp is signed, so a
body caught on the way cannot be sent again later: one older than ``PAST_SECONDS`` (or
further ahead than ``FUTURE_SECONDS``, a clock set wrong) is refused, and within that
window a signature is accepted once (``inference.once``)."""

import hashlib
import hmac
import time
from dataclasses import dataclass

SIGNATURE_HEADER = "X-Gateway-Signature"
TIMESTAMP_HEADER = "X-Gateway-Timestamp"
PAST_SECONDS = 300
FUTURE_SECONDS = 60
_DIGITS = 12  # far beyond any Unix time in seconds this side of the year 33658


def signature(secret: str, timestamp: str, body: bytes) -> str:
    signed = timestamp.encode() + b"." + body
    return "sha256=" + hmac.new(secret.encode(), signed, hashlib.sha256).hexdigest()


def signed_headers(secret: str, body: bytes, now: float | None = None) -> dict[str, str]:
    """The headers that sign ``body`` now."""
    timestamp = str(int(time.time() if now is None else now))
    return {TIMESTAMP_HEADER: timestamp, SIGNATURE_HEADER: signature(secret, timestamp, body)}


@dataclass(frozen=True)
class Signed:
    """A body's signature that verified, and until when it could be sent again."""

    signature: str
    timestamp: int

    @property
    def replayable_until(self) -> int:
        return self.timestamp + PAST_SECONDS


@dataclass(frozen=True)
class Refusal:
    """Why a signed body is not accepted."""

    code: str
    message: str


def verify(
    secret: str, body: bytes, header: str | None, timestamp: str | None, now: float
) -> Signed | Refusal:
    """Whether ``header`` and ``timestamp`` sign ``body`` now. The signature is compared
    in constant time."""
    stamp = (timestamp or "").strip()
    if not (stamp.isascii() and stamp.isdigit() and len(stamp) <= _DIGITS):
        return Refusal(
            "invalid_timestamp", f"the {TIMESTAMP_HEADER} header must be a Unix time in seconds"
        )
    age = now - int(stamp)
    if age > PAST_SECONDS or -age > FUTURE_SECONDS:
        return Refusal(
            "stale_timestamp",
            f"the {TIMESTAMP_HEADER} is outside the window of {PAST_SECONDS} s before and "
            f"{FUTURE_SECONDS} s after the gateway's clock",
        )
    expected = signature(secret, stamp, body)
    given = (header or "").strip()
    if not secret or not hmac.compare_digest(expected.encode(), given.encode()):
        return Refusal("invalid_signature", f"the {SIGNATURE_HEADER} does not verify")
    return Signed(expected, int(stamp))
