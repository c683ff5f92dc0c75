"""HTTP Basic credentials against one configured pair, for ``/v1`` and ``/admin``.

The configured password is plain text or a Django password hash. A hash is slow on purpose,
so three things keep a flood of wrong passwords from starving everyone else:

- a correct credential is verified with the slow hash once, then remembered as a keyed
  digest of the presented pair (HMAC-SHA256 with a per-process key) until the configured
  pair changes, so a client that knows the password never waits for the hash again;
- at most ``SLOW_CHECKS`` slow hash checks run at once in the process (off the event loop);
  the others wait without holding a thread, newest first: under a flood the queue of wrong
  passwords grows, and first come first served would put a client that just arrived with
  the right password behind all of it (``bench/features/auth_flood.py`` measured 53 s for 64 flooding
  clients), while newest first serves it after about one hash;
- a wrong username costs the same as a wrong password: the hash runs anyway.
"""

import asyncio
import base64
import hashlib
import hmac
import secrets

from django.contrib.auth.hashers import check_password, identify_hasher

SLOW_CHECKS = 2


class NewestFirstSlots:
    """Like ``asyncio.Semaphore(size)``, except that waiters are let in newest first."""

    def __init__(self, size: int) -> None:
        self._free = size
        self._waiters: list[asyncio.Future[None]] = []

    async def __aenter__(self) -> None:
        if self._free > 0:
            self._free -= 1
            return
        waiter = asyncio.get_running_loop().create_future()
        self._waiters.append(waiter)
        try:
            await waiter
        except asyncio.CancelledError:
            if waiter.done() and not waiter.cancelled():
                self._release()  # let in, but cancelled before it could run
            elif waiter in self._waiters:  # a release may have dropped it already
                self._waiters.remove(waiter)
            raise

    async def __aexit__(self, *exc: object) -> None:
        self._release()

    def _release(self) -> None:
        while self._waiters:
            waiter = self._waiters.pop()
            if not waiter.done():
                waiter.set_result(None)
                return
        self._free += 1


_slow_checks = NewestFirstSlots(SLOW_CHECKS)


def basic_credentials(authorization: str | None) -> tuple[str, str] | None:
    """(username, password) of an ``Authorization: Basic`` header, else None."""
    scheme, _, encoded = (authorization or "").partition(" ")
    if scheme.lower() != "basic":
        return None
    try:
        decoded = base64.b64decode(encoded.strip(), validate=True).decode("utf-8")
    except (ValueError, UnicodeDecodeError):  # binascii.Error, and non-ASCII text
        return None
    username, colon, password = decoded.partition(":")
    return (username, password) if colon else None


def is_password_hash(password: str) -> bool:
    try:
        identify_hasher(password)
    except ValueError:
        return False
    return True


class BasicVerifier:
    """Checks presented pairs against the configured one; one instance per auth scope."""

    def __init__(self) -> None:
        self._key = secrets.token_bytes(32)
        self._configured: tuple[str, str] | None = None
        self._remembered: bytes | None = None

    async def verify(self, username: str, password: str, expected: tuple[str, str]) -> bool:
        if expected != self._configured:
            self._configured, self._remembered = expected, None
        digest = self._digest(username, password)
        if self._remembered is not None and hmac.compare_digest(digest, self._remembered):
            return True
        expected_user, expected_password = expected
        user_ok = _same(username, expected_user)
        if is_password_hash(expected_password):
            password_ok = await _slow_check(password, expected_password)
        else:
            password_ok = _same(password, expected_password)
        if user_ok and password_ok and expected == self._configured:
            self._remembered = digest
        return user_ok and password_ok

    def _digest(self, username: str, password: str) -> bytes:
        presented = f"{username}\x00{password}".encode()
        return hmac.new(self._key, presented, hashlib.sha256).digest()


def _same(presented: str, expected: str) -> bool:
    """Constant-time comparison that does not leak the length of the expected value."""
    return hmac.compare_digest(
        hashlib.sha256(presented.encode()).digest(), hashlib.sha256(expected.encode()).digest()
    )


async def _slow_check(password: str, stored_hash: str) -> bool:
    async with _slow_checks:
        return await asyncio.to_thread(check_password, password, stored_hash)
