"""The module that speaks each provider kind's wire format (the kinds themselves are
listed in ``core.providerkinds``: adding a wire format is one module and one line here),
and the one HTTP client each configured provider shares."""

import ssl
from functools import cache

import httpx

from agents.schema import Config
from core.bodylimit import MIB
from core.providerkinds import PROVIDER_KINDS
from inference.providers.anthropic_format import AnthropicProvider
from inference.providers.base import Provider
from inference.providers.cohere_format import CohereProvider
from inference.providers.gemini_format import GeminiProvider
from inference.providers.openai_format import OpenAIFormatProvider

_WIRE_FORMATS: tuple[type[Provider], ...] = (
    OpenAIFormatProvider,
    AnthropicProvider,
    GeminiProvider,
    CohereProvider,
)
_BY_WIRE = {wire.wire: wire for wire in _WIRE_FORMATS}
PROVIDER_CLASSES: dict[str, type[Provider]] = {
    name: _BY_WIRE[kind.wire] for name, kind in PROVIDER_KINDS.items()
}


class ProviderClients:
    """One ``httpx.AsyncClient`` per configured provider (name), created on first use.

    A provider is rebuilt when the config's settings for its name change (a reload), so
    base URL, key and timeouts follow the file without a restart; its client stays.
    """

    def __init__(self) -> None:
        self._clients: dict[str, httpx.AsyncClient] = {}
        self._providers: dict[str, Provider] = {}

    def provider(self, name: str, config: Config) -> Provider:
        settings = config.providers[name]
        cached = self._providers.get(name)
        if cached is not None and cached.settings is settings:
            cached.max_body_bytes = int(config.limits.max_upstream_body_mb * MIB)
            return cached
        kind = config.provider_kind(name)
        provider_class = PROVIDER_CLASSES.get(kind)
        if provider_class is None:
            raise LookupError(f"provider kind '{kind}' is not supported yet")
        client = self._clients.get(name)
        if client is None:
            client = httpx.AsyncClient(
                verify=_tls_context(),
                limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
            )
            self._clients[name] = client
        provider = self._providers[name] = provider_class(name, kind, client, settings)
        provider.max_body_bytes = int(config.limits.max_upstream_body_mb * MIB)
        return provider

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
        self._providers.clear()


@cache
def _tls_context() -> ssl.SSLContext:
    """The TLS context of every provider's client (httpx's default: the CA bundle, or
    ``SSL_CERT_FILE`` / ``SSL_CERT_DIR``): a context of its own per client loaded the
    bundle again, 0.6 MB of memory per provider."""
    return httpx.create_ssl_context()
