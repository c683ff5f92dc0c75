"""Which module speaks each provider kind, and the one HTTP client each kind shares."""

import httpx

from agents.schema import ProviderConfig
from inference.providers.anthropic_format import AnthropicProvider
from inference.providers.base import Provider
from inference.providers.cohere_format import CohereProvider
from inference.providers.gemini_format import GeminiProvider
from inference.providers.openai_format import OpenAIFormatProvider

PROVIDER_CLASSES: dict[str, type[Provider]] = {
    "openai": OpenAIFormatProvider,
    "groq": OpenAIFormatProvider,
    "deepseek": OpenAIFormatProvider,
    "anthropic": AnthropicProvider,
    "gemini": GeminiProvider,
    "cohere": CohereProvider,
}


class ProviderClients:
    """One ``httpx.AsyncClient`` per provider kind, created on first use.

    Base URL, key and timeout come from the config snapshot on every call, so a
    reload that changes them takes effect without rebuilding the client.
    """

    def __init__(self) -> None:
        self._clients: dict[str, httpx.AsyncClient] = {}

    def provider(self, kind: str, settings: ProviderConfig) -> Provider:
        provider_class = PROVIDER_CLASSES.get(kind)
        if provider_class is None:
            raise LookupError(f"provider kind '{kind}' is not supported yet")
        client = self._clients.get(kind)
        if client is None:
            client = httpx.AsyncClient(
                limits=httpx.Limits(max_connections=200, max_keepalive_connections=50),
                timeout=httpx.Timeout(120.0, connect=10.0),
            )
            self._clients[kind] = client
        return provider_class(kind, client, settings)

    async def aclose(self) -> None:
        for client in self._clients.values():
            await client.aclose()
        self._clients.clear()
