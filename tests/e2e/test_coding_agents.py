"""Claude Code and Codex CLI, as their users run them, pointed at the gateway: each
finishes a task that needs a shell command, against an agent on a fake upstream."""

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.fakes.base import FakeUpstream, Recorded, Reply
from tests.server import GatewayServer
from tests.services import NODE_CLIENTS
from tests.upstreams import shared_config

pytestmark = [pytest.mark.clients, pytest.mark.node]
MARK = "hello-from-the-shell"


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
    outputs = [
        message["content"]
        for recorded in openai_fake.requests
        for message in recorded.body.get("messages", [])
        if message.get("role") == "tool"
    ]
    assert any(MARK in output for output in outputs), outputs


def test_claude_code_runs_a_command_the_model_asked_for(
    gateway: GatewayServer, fakes: dict[str, FakeUpstream], tmp_path: Path
) -> None:
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
        "ANTHROPIC_BASE_URL": gateway.url,
        "ANTHROPIC_API_KEY": "any",
        "ANTHROPIC_MODEL": "anthropic-agent",
        "ANTHROPIC_SMALL_FAST_MODEL": "anthropic-agent",
        "ANTHROPIC_DEFAULT_HAIKU_MODEL": "anthropic-agent",
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
