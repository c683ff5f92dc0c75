"""The gateway as an MCP server at ``/mcp``, driven by the ``mcp`` SDK's own client: the
agents a key may use as ``ask_<agent>`` tools (a real turn: billed to the key's user and
recorded), the agents' MCP tools when the operator exposes them, a limited key's view,
and no key at all."""

import asyncio
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from tests.fakes.base import FakeUpstream, Reply
from tests.mcp_servers import http_greeter
from tests.polling import wait_for
from tests.server import GatewayServer, free_port
from tests.upstreams import fake_base_url

JSON = {"Accept": "application/json"}


@pytest.fixture(scope="module")
def greeter() -> Iterator[int]:
    with http_greeter(free_port()) as port:
        yield port


@pytest.fixture(scope="module")
def server(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream], greeter: int
) -> Iterator[GatewayServer]:
    config = f"""\
auth: {{proxy: {{api_keys: true}}}}
providers:
  openai: {{api_key: sk-test, base_url: '{fake_base_url(upstreams["openai"])}', retries: {{attempts: 0}}}}
pricing:
  "openai/gpt-helper": {{input: 1.0, output: 2.0}}
mcp:
  greeter: {{transport: http, url: 'http://127.0.0.1:{greeter}/mcp'}}
mcp_server: {{expose_tools: true}}
agents:
  - name: helper
    provider: openai
    model: gpt-helper
    purpose: Answers questions about ACME.
    history: false
  - name: greeter-bot
    provider: openai
    model: gpt-greeter
    history: false
    mcp_tools: [{{server: greeter, only: [say_hello, add]}}]
"""
    gateway = GatewayServer(tmp_path_factory.mktemp("mcp-server"), config).start()
    wait_for(
        lambda: (
            httpx.get(f"{gateway.url}/admin/mcp/greeter/state", headers=JSON).json()["state"]
            == "connected"
        ),
        "the greeter to connect",
    )
    yield gateway
    gateway.stop()


def mint(server: GatewayServer, user: str, **fields: Any) -> str:
    response = httpx.post(
        f"{server.url}/admin/keys", json={"name": "mcp", "user": user, **fields}, timeout=10
    )
    assert response.status_code == 201, response.text
    key: str = response.json()["key"]
    return key


async def _with_client(server: GatewayServer, key: str | None, work: Any) -> Any:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    async with httpx2.AsyncClient(headers=headers, timeout=30) as http:
        transport = streamable_http_client(f"{server.url}/mcp", http_client=http)
        async with Client(transport) as client:
            return await work(client)


def as_client(server: GatewayServer, key: str | None, work: Any) -> Any:
    return asyncio.run(_with_client(server, key, work))


def test_a_key_lists_its_agents_and_the_exposed_tools(server: GatewayServer) -> None:
    key = mint(server, f"user-{uuid.uuid4().hex[:8]}")

    async def listed(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in as_client(server, key, listed)}

    assert set(tools) == {"ask_helper", "ask_greeter-bot", "greeter__say_hello", "greeter__add"}
    assert tools["ask_helper"].description == "Answers questions about ACME."
    assert tools["ask_helper"].input_schema["required"] == ["message"]
    assert "name" in tools["greeter__say_hello"].input_schema["properties"]


def test_an_ask_is_a_turn_billed_to_the_keys_user_and_recorded(
    server: GatewayServer, openai_fake: FakeUpstream
) -> None:
    user = f"user-{uuid.uuid4().hex[:8]}"
    key = mint(server, user)
    openai_fake.script(Reply.of_text("ACME sells anvils."))

    async def ask(client: Client) -> Any:
        return await client.call_tool("ask_helper", {"message": "What does ACME sell?"})

    result = as_client(server, key, ask)

    assert not result.is_error
    assert result.content[0].text == "ACME sells anvils."
    assert openai_fake.last.body["messages"][-1]["content"] == "What does ACME sell?"
    spend = httpx.get(
        f"{server.url}/admin/spend", params={"group_by": "user"}, headers=JSON, timeout=10
    ).json()["data"]
    (mine,) = [row for row in spend if row["group"] == user]
    assert mine["requests"] == 1 and mine["cost_usd"] > 0

    def recorded() -> list[tuple[str, str]]:
        rows = httpx.get(
            f"{server.url}/admin/requests", params={"user": user}, headers=JSON, timeout=10
        ).json()["data"]
        return [(row["path"], row["agent"]) for row in rows]

    assert wait_for(recorded, "the request's record") == [("/mcp", "helper")]


def test_an_exposed_tool_is_called_on_its_mcp_server(server: GatewayServer) -> None:
    key = mint(server, f"user-{uuid.uuid4().hex[:8]}")

    async def greet(client: Client) -> Any:
        return await client.call_tool("greeter__say_hello", {"name": "Ada"})

    result = as_client(server, key, greet)

    assert not result.is_error and result.content[0].text == "Hello, Ada!"


def test_each_call_of_an_exposed_tool_counts_for_the_keys_rpm(server: GatewayServer) -> None:
    """Listing the tools is not a request; each call is, and the minute's second is
    refused as a tool error."""
    key = mint(server, f"user-{uuid.uuid4().hex[:8]}", rpm=1)

    async def add_thrice(client: Client) -> Any:
        await client.list_tools()
        return [await client.call_tool("greeter__add", {"a": 1, "b": 2}) for _ in range(3)]

    results = as_client(server, key, add_thrice)

    assert [result.is_error for result in results] == [False, True, True]
    assert results[0].content[0].text == "3"
    assert "requests per minute limit (1) is reached" in results[1].content[0].text


def test_a_limited_key_sees_and_asks_only_its_agents(server: GatewayServer) -> None:
    key = mint(server, f"user-{uuid.uuid4().hex[:8]}", agents=["helper"])

    async def listed_and_refused(client: Client) -> Any:
        tools = [tool.name for tool in (await client.list_tools()).tools]
        refused = await client.call_tool("ask_greeter-bot", {"message": "Hi"})
        return tools, refused

    tools, refused = as_client(server, key, listed_and_refused)

    assert tools == ["ask_helper"]
    assert refused.is_error and "ask_greeter-bot" in refused.content[0].text


def test_a_refusal_inside_a_call_is_a_tool_error(
    server: GatewayServer, openai_fake: FakeUpstream
) -> None:
    key = mint(server, f"user-{uuid.uuid4().hex[:8]}", budget_usd=0)

    async def ask(client: Client) -> Any:
        return await client.call_tool("ask_helper", {"message": "Hi"})

    result = as_client(server, key, ask)

    assert result.is_error and "budget" in result.content[0].text
    assert openai_fake.requests == []


def test_no_key_is_401(server: GatewayServer) -> None:
    response = httpx.post(
        f"{server.url}/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream"},
        timeout=10,
    )

    assert response.status_code == 401
    assert response.json()["error"]["type"] == "invalid_request_error"
