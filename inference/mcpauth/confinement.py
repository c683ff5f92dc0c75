"""Where a sign-in's fetches may go. The URLs of discovery, registration and tokens are
named by third parties (the MCP server's 401, its metadata, the authorization server's
metadata), so each is checked before anything is sent to it:

- https only; plain http only where the MCP server's own URL is http on a loopback
  address (local development);
- no private, link-local or loopback address (the gateway's own network, a cloud's
  metadata service) unless the MCP server itself is on such an address: an address of
  the same kind as one of the MCP server's is allowed, a public one always;
- no redirect is followed: a 3xx answer is a refusal.

The check holds for the address connected to: the host is resolved once, checked, and
the request goes to that address (the certificate is still checked against the name).
"""

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal
from urllib.parse import urlsplit

import httpx2

from inference.mcpauth.failures import AuthServerUnavailable

type Address = ipaddress.IPv4Address | ipaddress.IPv6Address
# What an address is: internal kinds are allowed only beside an MCP server of that kind.
type Place = Literal["public", "private", "link-local", "loopback", "reserved"]


def place_of(address: Address) -> Place:
    if isinstance(address, ipaddress.IPv6Address) and address.ipv4_mapped is not None:
        address = address.ipv4_mapped
    if address.is_unspecified or address.is_loopback:
        return "loopback"  # 0.0.0.0 and :: reach the host itself
    if address.is_multicast:
        return "reserved"
    if address.is_link_local:
        return "link-local"
    if address.is_global:
        return "public"
    return "private"


@dataclass(frozen=True)
class Boundary:
    """What the fetches of one MCP server's sign-ins may reach."""

    plain_http: bool  # the MCP server's URL is http on a loopback address
    places: frozenset[Place]  # the kinds of address allowed

    @classmethod
    def around(cls, scheme: str, addresses: Iterable[Address]) -> "Boundary":
        """The boundary of an MCP server at ``addresses`` (its host, resolved)."""
        own = frozenset(place_of(address) for address in addresses) - {"reserved"}
        return cls(scheme == "http" and own == {"loopback"}, own | {"public"})

    def refusal(self, url: str, addresses: Iterable[Address]) -> str | None:
        """Why ``url`` (its host at ``addresses``) may not be fetched (None: it may)."""
        scheme = urlsplit(url).scheme
        if scheme != "https" and not (scheme == "http" and self.plain_http):
            return (
                f"{url} is not https (plain http only where the MCP server itself is "
                "http on a loopback address)"
            )
        for address in addresses:
            place = place_of(address)
            if place not in self.places:
                return (
                    f"{url} is on a {place} address ({address}), and the MCP server is not: "
                    "the gateway does not fetch it"
                )
        return None


async def resolved(url: str) -> list[Address]:
    """The addresses of ``url``'s host (an address literal is itself)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        found = await asyncio.get_running_loop().getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as error:
        raise AuthServerUnavailable(f"{url}: its host cannot be resolved ({error})") from error
    return [ipaddress.ip_address(info[4][0]) for info in found]


async def boundary_of(mcp_url: str) -> Boundary:
    return Boundary.around(urlsplit(mcp_url).scheme, await resolved(mcp_url))


async def check(boundary: Boundary, url: str) -> Address:
    """The address to connect to for ``url``, or ``AuthServerUnavailable`` saying why
    it may not be fetched."""
    addresses = await resolved(url)
    reason = boundary.refusal(url, addresses)
    if reason is not None:
        raise AuthServerUnavailable(f"The sign-in was refused: {reason}.")
    return addresses[0]


class ConfinedTransport(httpx2.AsyncBaseTransport):
    """Sends a request only where ``boundary`` allows, to the address checked, and
    refuses a redirect."""

    def __init__(self, boundary: Boundary, inner: httpx2.AsyncBaseTransport) -> None:
        self.boundary = boundary
        self.inner = inner

    async def handle_async_request(self, request: httpx2.Request) -> httpx2.Response:
        url = str(request.url)
        address = await check(self.boundary, url)
        host = request.url.host
        pinned = httpx2.Request(
            request.method,
            request.url.copy_with(host=str(address)),
            headers=request.headers,  # Host: still the name
            stream=request.stream,
            extensions={**request.extensions, "sni_hostname": host},
        )
        response = await self.inner.handle_async_request(pinned)
        if response.is_redirect:
            await response.aclose()
            raise AuthServerUnavailable(
                f"The sign-in was refused: {url} answered a redirect (HTTP "
                f"{response.status_code}); the gateway follows none in a sign-in."
            )
        return response

    async def aclose(self) -> None:
        await self.inner.aclose()
