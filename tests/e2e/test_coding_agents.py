"""Claude Code, Codex CLI and Gemini CLI, as their users run them, pointed at the gateway
with the docs' recipes: each finishes a task that needs a shell command, against an agent
on a fake upstream."""

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.server import GatewayServer
from tests.services import NODE_CLIENTS
from tests.upstreams import shared_config

pytestmark = [pytest.mark.clients, pytest.mark.node]
MARK = "hello-from-the-shell"
# The docs' recipes: an agent with history off (a coding agent sends the whole
# conversation every time), and every model name the coding agent sends on its own an
# alias of it.
RECIPE_AGENTS = (
    "  - {name: coder, provider: anthropic, model: claude-model-1, history: false}\n"
    "  - {name: gemini-coder, provider: openai, model: gpt-model-1, history: false}\n"
)
RECIPE_ALIASES = 'aliases:\n  "claude-*": coder\n  "gemini-*": gemini-coder\n'


@pytest.fixture(scope="module")
def recipe(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    """A gateway configured as the docs' coding-agent recipes say."""
    shared = shared_config(upstreams)
    config = shared.replace("embedders:\n", RECIPE_AGENTS + "embedders:\n", 1) + RECIPE_ALIASES
    server = GatewayServer(tmp_path_factory.mktemp("recipe"), config).start()
    yield server
    server.stop()


def run_cli(
    command: list[str], home: Path, env: dict[str, str], timeout: float = 110
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        cwd=home,
        env={"PATH": f"{NODE_CLIENTS}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home), **env},
    )


def answered_a_tool(recorded: Recorded) -> bool:
    return MARK in json.dumps(recorded.body) and "tool" in json.dumps(recorded.body)


def tool_outputs(fake: FakeUpstream) -> list[str]:
    """The tool results an OpenAI-format upstream was sent."""
    return [
        message["content"]
        for recorded in fake.requests
        for message in recorded.body.get("messages", [])
        if message.get("role") == "tool"
    ]


def test_codex_exec_runs_a_command_the_model_asked_for(
    gateway: GatewayServer, openai_fake: FakeUpstream, tmp_path: Path, user_id: str
) -> None:
    def has_result(recorded: Recorded) -> bool:
        return any(m.get("role") == "tool" for m in recorded.body.get("messages", []))

    openai_fake.answer_when(has_result, Reply.of_text(f"The shell said {MARK}."))
    openai_fake.answer_when(
        lambda recorded: not has_result(recorded),
        Reply.of_tool_calls(("exec_command", {"cmd": f"echo {MARK}"})),
    )
    codex_home = tmp_path / ".codex"
    codex_home.mkdir()
    (codex_home / "config.toml").write_text(
        'model = "openai-agent"\n'
        'model_provider = "gateway"\n'
        "[model_providers.gateway]\n"
        'name = "Agent gateway"\n'
        f'base_url = "{gateway.url}/v1"\n'
        'env_key = "GATEWAY_API_KEY"\n'
        'wire_api = "responses"\n'
        f'http_headers = {{ "X-User-Id" = "{user_id}" }}\n'
    )

    result = run_cli(
        [
            "codex",
            "exec",
            "--skip-git-repo-check",
            "--dangerously-bypass-approvals-and-sandbox",
            "Run echo in the shell and tell me what it printed.",
        ],
        tmp_path,
        {"CODEX_HOME": str(codex_home), "GATEWAY_API_KEY": "any"},
    )

    assert result.returncode == 0, result.stderr[-3000:]
    assert f"The shell said {MARK}." in result.stdout
    outputs = tool_outputs(openai_fake)
    assert any(MARK in output for output in outputs), outputs


def test_claude_code_runs_a_command_the_model_asked_for(
    recipe: GatewayServer, fakes: dict[str, FakeUpstream], tmp_path: Path
) -> None:
    """No model variables: Claude Code's own model names (its main and its small fast
    model) are aliases of one agent."""
    fake = fakes["anthropic"]

    def has_result(recorded: Recorded) -> bool:
        return any(
            block.get("type") == "tool_result"
            for message in recorded.body.get("messages", [])
            if isinstance(message.get("content"), list)
            for block in message["content"]
        )

    def offers_bash(recorded: Recorded) -> bool:
        return any(tool.get("name") == "Bash" for tool in recorded.body.get("tools") or [])

    fake.answer_when(has_result, Reply.of_text(f"The shell said {MARK}."))
    fake.answer_when(
        offers_bash,
        Reply.of_tool_calls(("Bash", {"command": f"echo {MARK}", "description": "Print it"})),
    )
    env = {
        "ANTHROPIC_BASE_URL": recipe.url,
        "ANTHROPIC_API_KEY": "any",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
    }

    result = run_cli(
        [
            "claude",
            "-p",
            "Run echo in the shell and tell me what it printed.",
            "--allowedTools",
            "Bash(echo:*)",
        ],
        tmp_path,
        env,
    )

    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert f"The shell said {MARK}." in result.stdout
    results: list[Any] = [
        block.get("content")
        for recorded in fake.requests
        for message in recorded.body.get("messages", [])
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    assert any(MARK in json.dumps(content) for content in results), results
    assert {recorded.body["model"] for recorded in fake.requests} == {"claude-model-1"}


@pytest.mark.parametrize("model", [[], ["-m", "gemini-coder"]], ids=["aliases", "agent"])
def test_gemini_cli_runs_a_command_the_model_asked_for(
    model: list[str],
    recipe: GatewayServer,
    openai_fake: FakeUpstream,
    tmp_path: Path,
    user_id: str,
) -> None:
    """Gemini CLI on an agent whose upstream speaks OpenAI's wire format: its function
    call is run by the CLI and the result goes back as a ``functionResponse``. Without
    ``-m`` it first asks its router model (flash-lite, for a JSON complexity score) and
    then its pro model: both are aliases."""

    def has_result(recorded: Recorded) -> bool:
        return any(m.get("role") == "tool" for m in recorded.body.get("messages", []))

    def offers_shell(recorded: Recorded) -> bool:
        names = [tool["function"]["name"] for tool in recorded.body.get("tools") or []]
        return "run_shell_command" in names

    def asks_to_route(recorded: Recorded) -> bool:
        return "complexity_score" in json.dumps(recorded.body.get("response_format"))

    openai_fake.answer_when(
        asks_to_route,
        Reply.of_text('{"complexity_reasoning": "One command.", "complexity_score": 5}'),
    )
    openai_fake.answer_when(has_result, Reply.of_text(f"The shell said {MARK}."))
    openai_fake.answer_when(
        offers_shell,
        Reply.of_tool_calls(("run_shell_command", {"command": f"echo {MARK}"})),
    )
    settings = tmp_path / ".gemini"
    settings.mkdir()
    (settings / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    )
    env = {
        "GOOGLE_GEMINI_BASE_URL": recipe.url,
        "GEMINI_API_KEY": "any",
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
        "GEMINI_CLI_CUSTOM_HEADERS": f"X-User-Id: {user_id}",
    }

    result = run_cli(
        [
            "gemini",
            *model,
            "--approval-mode",
            "yolo",
            "-p",
            "Run echo in the shell and tell me what it printed.",
        ],
        tmp_path,
        env,
    )

    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert f"The shell said {MARK}." in result.stdout
    outputs = tool_outputs(openai_fake)
    assert any(MARK in output for output in outputs), outputs
    routed = [recorded for recorded in openai_fake.requests if asks_to_route(recorded)]
    assert len(routed) == (0 if model else 1)
    assert {recorded.body["model"] for recorded in openai_fake.requests} == {"gpt-model-1"}


@pytest.fixture(scope="module")
def keyed(
    tmp_path_factory: pytest.TempPathFactory, upstreams: dict[str, FakeUpstream]
) -> Iterator[GatewayServer]:
    """A gateway that takes minted API keys only."""
    config = "auth: {proxy: {api_keys: true}}\n" + shared_config(upstreams)
    server = GatewayServer(tmp_path_factory.mktemp("keyed"), config).start()
    yield server
    server.stop()


def test_claude_code_with_a_wrong_key_stops_at_once(
    keyed: GatewayServer, fakes: dict[str, FakeUpstream], tmp_path: Path
) -> None:
    """Claude Code retries every 401 that does not say ``x-should-retry: false``: about
    ten silent retries, minutes without a word."""
    env = {
        "ANTHROPIC_BASE_URL": keyed.url,
        "ANTHROPIC_API_KEY": "sk-gw-revoked000000000000000000000000000000000",
        "ANTHROPIC_MODEL": "anthropic-agent",
        "ANTHROPIC_SMALL_FAST_MODEL": "anthropic-agent",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
    }

    result = run_cli(["claude", "-p", "Hello."], tmp_path, env, timeout=60)

    assert result.returncode != 0
    assert (
        "401" in result.stdout + result.stderr
        or "authenticat" in (result.stdout + result.stderr).lower()
    )
    assert fakes["anthropic"].requests == []


def test_claude_code_with_a_spent_key_stops_at_once(
    keyed: GatewayServer, fakes: dict[str, FakeUpstream], tmp_path: Path
) -> None:
    """A spent budget's 429 says ``x-should-retry: false``: without it Claude Code retried
    a spent key for three minutes (the run's timeout fails the test)."""
    minted = httpx.post(
        f"{keyed.url}/admin/keys", json={"name": "spent", "user": "coder", "budget_usd": 0}
    )
    assert minted.status_code == 201, minted.text
    env = {
        "ANTHROPIC_BASE_URL": keyed.url,
        "ANTHROPIC_API_KEY": minted.json()["key"],
        "ANTHROPIC_MODEL": "anthropic-agent",
        "ANTHROPIC_SMALL_FAST_MODEL": "anthropic-agent",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
    }

    result = run_cli(["claude", "-p", "Hello."], tmp_path, env, timeout=45)

    assert result.returncode != 0
    assert "budget is spent" in result.stdout + result.stderr
    assert fakes["anthropic"].requests == []


def test_gemini_cli_with_a_spent_key_stops_at_once(
    keyed: GatewayServer, fakes: dict[str, FakeUpstream], tmp_path: Path
) -> None:
    """Gemini CLI reads Google's ``RetryInfo`` detail, not ``x-should-retry``: without it
    the CLI tried a spent key ten times in three and a half minutes."""
    minted = httpx.post(
        f"{keyed.url}/admin/keys", json={"name": "spent", "user": "gemini", "budget_usd": 0}
    )
    assert minted.status_code == 201, minted.text
    settings = tmp_path / ".gemini"
    settings.mkdir()
    (settings / "settings.json").write_text(
        json.dumps({"security": {"auth": {"selectedType": "gemini-api-key"}}})
    )
    env = {
        "GOOGLE_GEMINI_BASE_URL": keyed.url,
        "GEMINI_API_KEY": minted.json()["key"],
        "GEMINI_CLI_TRUST_WORKSPACE": "true",
    }

    result = run_cli(["gemini", "-m", "openai-agent", "-p", "Hello."], tmp_path, env, timeout=45)

    assert result.returncode != 0
    assert "budget is spent" in result.stdout + result.stderr
    assert fakes["openai"].requests == []


def test_claude_code_asks_an_agent_through_the_gateways_mcp_server(
    keyed: GatewayServer, fakes: dict[str, FakeUpstream], tmp_path: Path
) -> None:
    """``claude mcp add --transport http`` with a minted key, as docs/mcp.md says: Claude
    Code lists the gateway's tools and calls ``ask_openai-agent``, a turn of that agent."""
    minted = httpx.post(
        f"{keyed.url}/admin/keys", json={"name": "claude", "user": "coder"}, timeout=10
    )
    key = minted.json()["key"]
    tool = "mcp__gateway__ask_openai-agent"

    def has_result(recorded: Recorded) -> bool:
        return "tool_result" in json.dumps(recorded.body.get("messages", []))

    def offers_the_tool(recorded: Recorded) -> bool:
        return any(item.get("name") == tool for item in recorded.body.get("tools") or [])

    fakes["anthropic"].answer_when(has_result, Reply.of_text(f"The agent said: {MARK}"))
    fakes["anthropic"].answer_when(
        offers_the_tool, Reply.of_tool_calls((tool, {"message": "Say the mark."}))
    )
    fakes["openai"].script(Reply.of_text(MARK))
    env = {
        "ANTHROPIC_BASE_URL": keyed.url,
        "ANTHROPIC_API_KEY": key,
        "ANTHROPIC_MODEL": "anthropic-agent",
        "ANTHROPIC_SMALL_FAST_MODEL": "anthropic-agent",
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        # MCP tools in the first request (no tool search round first): one scripted call.
        "ENABLE_TOOL_SEARCH": "false",
    }
    added = run_cli(
        [
            "claude",
            "mcp",
            "add",
            "--transport",
            "http",
            "gateway",
            f"{keyed.url}/mcp",
            "--header",
            f"Authorization: Bearer {key}",
        ],
        tmp_path,
        env,
        timeout=60,
    )
    assert added.returncode == 0, added.stdout + added.stderr

    result = run_cli(
        ["claude", "-p", "Ask the agent for the mark.", "--allowedTools", tool], tmp_path, env
    )

    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    assert f"The agent said: {MARK}" in result.stdout
    assert fakes["openai"].last.body["messages"][-1]["content"] == "Say the mark."
