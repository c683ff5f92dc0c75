"""The config rules of MCP servers that sign each user in (``mcp.<server>.oauth``) and of
``public_base_url``, which their connect links need: each broken on its own, refused
with a message that starts with the path of what is wrong."""

from typing import Any

import pytest

from agents.loader import ConfigError, load_config_data
from agents.schema import McpOAuthConfig


def config(oauth: Any = "discover", **top: Any) -> dict[str, Any]:
    return {
        "public_base_url": "https://gateway.example.com",
        "providers": {"openai": {"api_key": "sk-1"}},
        "mcp": {
            "notes": {"transport": "http", "url": "https://notes.example.com/mcp", "oauth": oauth},
            "local": {"transport": "stdio", "command": "python"},
        },
        "agents": [
            {
                "name": "assistant",
                "provider": "openai",
                "model": "gpt-4.1-mini",
                "mcp_tools": [{"server": "notes", "only": ["search"]}],
            }
        ],
        **top,
    }


def problems(data: dict[str, Any]) -> list[str]:
    with pytest.raises(ConfigError) as refused:
        load_config_data(data)
    return refused.value.problems


@pytest.mark.parametrize(
    ("oauth", "expected"),
    [
        ("discover", McpOAuthConfig()),
        ({}, McpOAuthConfig()),
        (
            {"scopes": ["notes.read", "offline_access"], "client_id": "gateway"},
            McpOAuthConfig(scopes=["notes.read", "offline_access"], client_id="gateway"),
        ),
    ],
    ids=["discover", "empty mapping", "scopes and client id"],
)
def test_the_two_forms_of_oauth_load(oauth: Any, expected: McpOAuthConfig) -> None:
    loaded = load_config_data(config(oauth))

    assert loaded.mcp["notes"].oauth == expected
    assert loaded.mcp["local"].oauth is None


@pytest.mark.parametrize(
    ("oauth", "message"),
    [
        ("yes", "mcp.notes.oauth: must be 'discover' or a mapping {scopes: [...], client_id: ...}, got 'yes'"),
        (True, "mcp.notes.oauth: must be 'discover' or a mapping {scopes: [...], client_id: ...}, got True"),
        (["notes.read"], "mcp.notes.oauth: must be 'discover' or a mapping {scopes: [...], client_id: ...}, got ['notes.read']"),
        ({"scopes": "notes.read"}, "mcp.notes.oauth.scopes: input should be a valid list"),
        ({"scopes": [1]}, "mcp.notes.oauth.scopes[0]: input should be a valid string"),
        ({"scopes": ["notes read"]}, "mcp.notes.oauth.scopes[0]: 'notes read' is not a scope (one word, no spaces)"),
        ({"scopes": [""]}, "mcp.notes.oauth.scopes[0]: '' is not a scope (one word, no spaces)"),
        ({"client_id": " "}, "mcp.notes.oauth.client_id: must not be blank (remove it to register the gateway dynamically)"),
        ({"client_id": 7}, "mcp.notes.oauth.client_id: input should be a valid string"),
    ],
    ids=["other word", "boolean", "list", "scopes not a list", "scope not text", "two words", "blank scope", "blank client id", "client id not text"],
)  # fmt: skip
def test_a_bad_oauth_value_is_refused_with_its_path(oauth: Any, message: str) -> None:
    assert problems(config(oauth)) == [message]


def test_oauth_on_a_stdio_server_is_refused() -> None:
    data = config()
    data["mcp"]["local"]["oauth"] = "discover"

    assert problems(data) == [
        "mcp.local.oauth: only with transport 'http' (users sign in to remote servers; a stdio "
        "server takes its credentials in env)"
    ]


def test_a_server_that_signs_users_in_needs_public_base_url() -> None:
    data = config()
    del data["public_base_url"]

    assert problems(data) == [
        "public_base_url: required when an MCP server signs users in (mcp.notes.oauth): the "
        "gateway's URL as the users' browsers reach it, for the links that connect their accounts"
    ]
    assert problems(config(public_base_url=" ")) == problems(data)


def test_without_oauth_public_base_url_is_not_required() -> None:
    data = config()
    del data["public_base_url"], data["mcp"]["notes"]["oauth"]

    assert load_config_data(data).public_base_url is None


@pytest.mark.parametrize(
    "url",
    ["gateway.example.com", "ftp://gateway.example.com", "https://g.example.com/?a=1", "https://"],
)
def test_public_base_url_is_an_absolute_web_address(url: str) -> None:
    assert problems(config(public_base_url=url)) == [
        "public_base_url: must be an absolute http:// or https:// URL without query or "
        f"fragment, got {url!r}"
    ]


def test_a_public_base_url_with_a_path_is_accepted() -> None:
    loaded = load_config_data(config(public_base_url="https://example.com/gateway/"))

    assert loaded.public_base_url == "https://example.com/gateway/"


def test_the_name_of_the_admins_connections_page_is_reserved() -> None:
    data = config()
    data["mcp"]["connections"] = data["mcp"].pop("notes")
    data["agents"][0]["mcp_tools"][0]["server"] = "connections"

    assert problems(data) == [
        "mcp.connections: the name 'connections' is reserved (the admin lists the users' MCP "
        "connections at /admin/mcp/connections)"
    ]
