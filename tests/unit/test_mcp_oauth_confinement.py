"""Where an MCP sign-in's fetches may go (``inference.mcpauth.confinement``): the address
rules a loopback-only test machine cannot reach end to end (public, private and
link-local MCP servers and authorization servers)."""

import ipaddress

import pytest

from inference.mcpauth.confinement import Boundary, place_of


def ips(*texts: str) -> list[ipaddress.IPv4Address | ipaddress.IPv6Address]:
    return [ipaddress.ip_address(text) for text in texts]


@pytest.mark.parametrize(
    ("address", "place"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("::ffff:127.0.0.1", "loopback"),
        ("0.0.0.0", "loopback"),
        ("10.1.2.3", "private"),
        ("172.16.0.9", "private"),
        ("192.168.1.1", "private"),
        ("100.64.0.1", "private"),
        ("fd00::2", "private"),
        ("169.254.169.254", "link-local"),
        ("fe80::1", "link-local"),
        ("224.0.0.1", "reserved"),
        ("93.184.216.34", "public"),
        ("2606:4700::1111", "public"),
    ],
)
def test_place_of_an_address(address: str, place: str) -> None:
    assert place_of(ipaddress.ip_address(address)) == place


PUBLIC_MCP = Boundary.around("https", ips("93.184.216.34"))


@pytest.mark.parametrize(
    ("url", "addresses", "refused"),
    [
        ("https://auth.example.com/token", ["93.184.216.35"], None),
        ("http://auth.example.com/token", ["93.184.216.35"], "is not https"),
        ("https://127.0.0.1:18521/meta", ["127.0.0.1"], "loopback address"),
        ("https://internal.example/meta", ["10.0.0.5"], "private address"),
        ("https://169.254.169.254/latest/meta-data", ["169.254.169.254"], "link-local address"),
        ("https://[::ffff:127.0.0.1]/meta", ["::ffff:127.0.0.1"], "loopback address"),
        ("https://mixed.example/meta", ["93.184.216.35", "10.0.0.5"], "private address"),
        ("https://multicast.example/", ["224.0.0.1"], "reserved address"),
    ],
)
def test_a_public_mcp_servers_sign_ins_fetch_public_https_urls_only(
    url: str, addresses: list[str], refused: str | None
) -> None:
    reason = PUBLIC_MCP.refusal(url, ips(*addresses))
    if refused is None:
        assert reason is None
    else:
        assert reason is not None and refused in reason


def test_an_mcp_server_on_a_private_address_may_name_private_ones_not_loopback() -> None:
    private = Boundary.around("https", ips("10.0.0.4"))
    assert private.refusal("https://auth.internal/token", ips("10.0.0.5")) is None
    assert private.refusal("https://auth.example.com/token", ips("93.184.216.35")) is None
    assert "loopback" in (private.refusal("https://localhost/token", ips("127.0.0.1")) or "")
    assert "link-local" in (private.refusal("https://x/", ips("169.254.169.254")) or "")
    assert "not https" in (private.refusal("http://auth.internal/token", ips("10.0.0.5")) or "")


def test_plain_http_only_for_an_mcp_server_that_is_itself_http_on_loopback() -> None:
    local = Boundary.around("http", ips("127.0.0.1"))
    assert local.refusal("http://127.0.0.1:9000/token", ips("127.0.0.1")) is None
    assert local.refusal("https://auth.example.com/token", ips("93.184.216.35")) is None
    assert "private" in (local.refusal("http://10.0.0.5/token", ips("10.0.0.5")) or "")
    local_tls = Boundary.around("https", ips("127.0.0.1"))
    assert "not https" in (local_tls.refusal("http://127.0.0.1:9000/m", ips("127.0.0.1")) or "")
    assert local_tls.refusal("https://127.0.0.1:9000/m", ips("127.0.0.1")) is None
    private_http = Boundary.around("http", ips("10.0.0.4"))
    assert "not https" in (private_http.refusal("http://10.0.0.4/m", ips("10.0.0.4")) or "")
