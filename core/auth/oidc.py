"""An OpenID provider as the gateway sees it: its discovery document, its signing keys, and
the check of the JWTs it signs (ID tokens at the admin's login, bearer tokens on ``/v1``).

Everything is fetched with ``httpx.AsyncClient`` on the event loop and cached per process.
The keys are fetched when first needed and again when a token names a key id the cached set
does not have (the provider rotated its keys), at most once per ``REFETCH_INTERVAL``, so a
stream of tokens with made-up key ids cannot turn the gateway into a flood of the provider.
A failed fetch is remembered for ``RETRY_AFTER_FAILURE``: while the provider is down,
requests fail at once (503) instead of each waiting up to ``FETCH_TIMEOUT`` in turn.

joserfc (0.7 MB) is loaded by the first token checked: a process without OpenID Connect
never loads it.
"""

import asyncio
import time
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import httpx

if TYPE_CHECKING:
    from joserfc.jwk import KeySet
    from joserfc.jwt import Token

LEEWAY_SECONDS = 30
REFETCH_INTERVAL = 60.0
FETCH_TIMEOUT = 10.0
RETRY_AFTER_FAILURE = 5.0
ALGORITHMS = (
    "RS256",
    "RS384",
    "RS512",
    "PS256",
    "PS384",
    "PS512",
    "ES256",
    "ES384",
    "ES512",
    "EdDSA",
)


_UNKNOWN_KEY = "the token is signed with a key the provider does not publish"


class ProviderUnavailable(Exception):
    """The provider's discovery document or keys could not be fetched."""


class InvalidToken(Exception):
    """A token the provider did not sign for us, or no longer valid: the message says why."""


@dataclass(frozen=True)
class ProviderMetadata:
    issuer: str
    authorization_endpoint: str
    token_endpoint: str
    jwks_uri: str
    end_session_endpoint: str | None


class OidcProvider:
    """One issuer: discovery from ``issuer_url``, its keys, and token verification."""

    def __init__(self, issuer_url: str) -> None:
        self.issuer_url = issuer_url
        self._metadata: ProviderMetadata | None = None
        self._keys: KeySet | None = None
        self._last_refetch = float("-inf")
        self._lock = asyncio.Lock()
        self._failure: tuple[float, str] | None = None  # when the last fetch failed, and why

    async def metadata(self) -> ProviderMetadata:
        if self._metadata is None:
            async with self._lock:
                if self._metadata is None:
                    self._metadata = await self._unless_failed_lately(self._discover)
        return self._metadata

    async def verify(self, token: str, audience: str, nonce: str | None = None) -> dict[str, Any]:
        """The token's claims, checked: signature, ``iss``, ``aud``, ``exp``/``nbf``, ``sub``
        (and ``nonce`` when given). Raises ``InvalidToken`` or ``ProviderUnavailable``."""
        from joserfc import jwt
        from joserfc.errors import InvalidKeyIdError, JoseError

        metadata = await self.metadata()
        keys = await self._key_set(metadata)
        try:
            decoded = _decode(token, keys)
        except InvalidKeyIdError:
            try:
                decoded = _decode(token, await self._refetched_keys(metadata, keys))
            except InvalidKeyIdError as error:
                raise InvalidToken(_UNKNOWN_KEY) from error
        claims: dict[str, Any] = {
            "iss": {"essential": True, "value": metadata.issuer},
            "aud": {"essential": True, "value": audience},
            "exp": {"essential": True},
            "sub": {"essential": True},
        }
        if nonce is not None:
            claims["nonce"] = {"essential": True, "value": nonce}
        registry = jwt.JWTClaimsRegistry(leeway=LEEWAY_SECONDS, **claims)
        try:
            registry.validate(decoded.claims)
        except JoseError as error:
            raise InvalidToken(_describe(error)) from error
        return decoded.claims

    async def _key_set(self, metadata: ProviderMetadata) -> "KeySet":
        if self._keys is None:
            async with self._lock:
                if self._keys is None:
                    self._keys = await self._unless_failed_lately(lambda: _fetch_keys(metadata))
        return self._keys

    async def _refetched_keys(self, metadata: ProviderMetadata, stale: "KeySet") -> "KeySet":
        """Fetch the keys again for an unknown key id, unless that was done less than
        ``REFETCH_INTERVAL`` ago; the refetch is shared by concurrent requests."""
        async with self._lock:
            if self._keys is not stale:
                return self._keys or stale
            if time.monotonic() - self._last_refetch < REFETCH_INTERVAL:
                raise InvalidToken(_UNKNOWN_KEY)
            self._last_refetch = time.monotonic()
            self._keys = await _fetch_keys(metadata)
            return self._keys

    async def _unless_failed_lately[T](self, fetch: Callable[[], Awaitable[T]]) -> T:
        """``fetch()``, called with the lock held, unless a fetch failed less than
        ``RETRY_AFTER_FAILURE`` ago: the requests queued behind that one, and those that
        come meanwhile, fail at once with its reason."""
        if self._failure is not None:
            failed_at, reason = self._failure
            if time.monotonic() - failed_at < RETRY_AFTER_FAILURE:
                raise ProviderUnavailable(reason)
        try:
            result = await fetch()
        except ProviderUnavailable as error:
            self._failure = (time.monotonic(), str(error))
            raise
        self._failure = None
        return result

    async def _discover(self) -> ProviderMetadata:
        url = self.issuer_url.rstrip("/") + "/.well-known/openid-configuration"
        document = await _get_json(url)
        try:
            metadata = ProviderMetadata(
                issuer=document["issuer"],
                authorization_endpoint=document["authorization_endpoint"],
                token_endpoint=document["token_endpoint"],
                jwks_uri=document["jwks_uri"],
                end_session_endpoint=document.get("end_session_endpoint"),
            )
        except (KeyError, TypeError) as error:
            raise ProviderUnavailable(f"{url} is not an OpenID discovery document") from error
        if metadata.issuer.rstrip("/") != self.issuer_url.rstrip("/"):
            raise ProviderUnavailable(
                f"{url} names the issuer {metadata.issuer!r}, not {self.issuer_url!r}"
            )
        return metadata


async def _fetch_keys(metadata: ProviderMetadata) -> "KeySet":
    from joserfc.errors import JoseError
    from joserfc.jwk import KeySet

    document = await _get_json(metadata.jwks_uri)
    try:
        return KeySet.import_key_set(document)  # type: ignore[arg-type]
    except (JoseError, KeyError, TypeError, ValueError) as error:
        raise ProviderUnavailable(f"{metadata.jwks_uri} holds no usable keys") from error


def _decode(token: str, keys: "KeySet") -> "Token":
    from joserfc import jwt
    from joserfc.errors import InvalidKeyIdError, JoseError

    try:
        return jwt.decode(token, keys, algorithms=list(ALGORITHMS))
    except InvalidKeyIdError:
        raise
    except (JoseError, ValueError, TypeError) as error:
        raise InvalidToken(_describe(error)) from error


def _describe(error: Exception) -> str:
    detail = getattr(error, "description", None) or str(error) or type(error).__name__
    return f"the token is not valid: {detail}"


async def _get_json(url: str) -> dict[str, Any]:
    try:
        async with httpx.AsyncClient(timeout=FETCH_TIMEOUT) as client:
            response = await client.get(url, headers={"Accept": "application/json"})
            response.raise_for_status()
            document = response.json()
    except (httpx.HTTPError, ValueError) as error:
        raise ProviderUnavailable(f"could not fetch {url}: {error}") from error
    if not isinstance(document, dict):
        raise ProviderUnavailable(f"{url} did not answer a JSON object")
    return document


_providers: dict[str, OidcProvider] = {}


def provider_for(issuer_url: str) -> OidcProvider:
    """The process's one ``OidcProvider`` per issuer, so its keys are fetched once."""
    provider = _providers.get(issuer_url)
    if provider is None:
        provider = _providers[issuer_url] = OidcProvider(issuer_url)
    return provider
