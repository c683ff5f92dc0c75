"""Coulisse's own config shapes (docs/configuration.md, "Coulisse's keys"), section by
section: what each key means once loaded, what is refused, what is warned; and that a
file holding both shapes keeps the gateway's own keys."""

from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from agents.loader import ConfigError, load_config_text
from agents.schema import Config, MemoryConfig, Upstream

OPENAI = "providers:\n  openai: {api_key: sk-test}\n"
BOTH = "providers:\n  anthropic: {api_key: sk-ant}\n  openai: {api_key: sk-test}\n"
AGENTS = """\
agents:
  - {name: a, provider: openai, model: m, judges: [j]}
  - {name: b, provider: openai, model: m}
  - {name: quiet, provider: openai, model: m, history: false}
judges: [{name: j, provider: openai, model: m, rubrics: {x: y}}]
"""


def load(text: str) -> Config:
    return load_config_text(text)


def problems(text: str) -> list[str]:
    with pytest.raises(ConfigError) as refused:
        load_config_text(text)
    return refused.value.problems


def warned(config: Config) -> dict[str, str]:
    return {warning.path: warning.message for warning in config.warnings}


# memory.user_state


def test_user_state_true_turns_memory_on_with_coulisse_picks() -> None:
    config = load(BOTH + AGENTS + "memory: {user_state: true}\n")

    memories = {agent.name: agent.memory for agent in config.agents}
    assert memories["quiet"] is None  # no history, nothing to remember from
    assert memories["a"] == memories["b"]
    memory = memories["a"]
    assert memory is not None and memory.embedder == "memory:embedder"
    embedder = config.embedder("memory:embedder")
    assert embedder is not None
    assert (embedder.provider, embedder.model) == ("openai", "text-embedding-3-small")
    # Coulisse's order: anthropic first, with its cheap model.
    assert memory.extractor == Upstream(provider="anthropic", model="claude-haiku-4-5-20251001")
    extractor = config.extractor(memory)
    assert extractor is not None and extractor.model == "claude-haiku-4-5-20251001"
    assert config.agent(extractor.name) is None  # not a model clients can call
    assert config.warnings == ()


def test_user_state_settings_name_the_extractor_and_tune_recall() -> None:
    config = load(
        BOTH
        + AGENTS
        + """\
memory:
  user_state:
    learn_from: {provider: openai, model: gpt-4.1-nano}
    embed_with: {provider: openai, model: text-embedding-3-large}
    recall_k: 2
    dedup_threshold: 0.8
    max_facts_per_turn: 3
"""
    )
    memory = config.agents[0].memory
    assert memory == MemoryConfig(
        embedder="memory:embedder",
        extractor=Upstream(provider="openai", model="gpt-4.1-nano"),
        recall=2,
        dedup=0.8,
        max_facts=3,
    )
    embedder = config.embedder("memory:embedder")
    assert embedder is not None and embedder.model == "text-embedding-3-large"


def test_an_agents_own_memory_is_kept_beside_user_state() -> None:
    config = load(
        OPENAI
        + """\
embedders: [{name: mine, provider: openai, model: e}]
agents:
  - {name: a, provider: openai, model: m, memory: {embedder: mine, recall: 9}}
  - {name: b, provider: openai, model: m}
memory: {user_state: true}
"""
    )
    own, shared = (agent.memory for agent in config.agents)
    assert own is not None and (own.embedder, own.recall, own.extractor) == ("mine", 9, None)
    assert shared is not None and shared.embedder == "memory:embedder"


def test_user_state_false_or_without_an_embedder_leaves_memory_off() -> None:
    off = load(OPENAI + AGENTS + "memory: {user_state: false, storage: /var/db}\n")
    assert [agent.memory for agent in off.agents] == [None, None, None]
    assert list(warned(off)) == ["memory.storage"]

    anthropic_only = load(
        "providers: {anthropic: {api_key: k}}\n"
        "agents: [{name: a, provider: anthropic, model: m}]\n"
        "memory: {user_state: true}\n"
    )
    assert anthropic_only.agents[0].memory is None
    assert "long-term memory stays off" in warned(anthropic_only)["memory.user_state"]


def test_user_state_with_an_unconfigured_extractor_is_refused() -> None:
    assert problems(
        OPENAI + AGENTS + "memory: {user_state: {learn_from: {provider: groq, model: m}}}\n"
    ) == [
        "agents[0].memory.extractor.provider: provider 'groq' is not configured",
        "agents[1].memory.extractor.provider: provider 'groq' is not configured",
    ]


# MCP servers


def test_mcp_transports_are_inferred_and_oauth_false_is_no_oauth() -> None:
    config = load(
        OPENAI
        + AGENTS
        + """\
public_base_url: https://gw.example.com
mcp:
  local: {command: uvx, args: [server]}
  remote: {url: "https://mcp.example.com/mcp"}
  legacy: {url: "https://mcp.example.com/v1/sse"}
  legacy_slash: {url: "https://mcp.example.com/sse/"}
  inside: {url: "http://docs.internal:7000", oauth: false}
  pinned: {url: "https://mcp.example.com/sse", transport: http}
  signed: {url: "https://mcp.example.com/", oauth: {scopes: [read]}}
"""
    )
    transports = {name: server.transport for name, server in config.mcp.items()}
    assert transports == {
        "local": "stdio",
        "remote": "http",
        "legacy": "sse",
        "legacy_slash": "sse",
        "inside": "http",
        "pinned": "http",
        "signed": "http",
    }
    assert config.mcp["inside"].oauth is None
    # Written without oauth (Coulisse's shape): users are signed in if the server asks.
    modes = {
        name: server.oauth.mode if server.oauth is not None else None
        for name, server in config.mcp.items()
    }
    assert modes == {
        "local": None,
        "remote": "when_asked",
        "legacy": "when_asked",
        "legacy_slash": "when_asked",
        "inside": None,
        "pinned": None,  # our shape (transport written): a shared session, as before
        "signed": "discover",
    }
    without_base = load(OPENAI + AGENTS + "mcp: {remote: {url: 'https://mcp.example.com'}}\n")
    assert "without public_base_url" in warned(without_base)["mcp.remote"]
    oauth = config.mcp["signed"].oauth
    assert oauth is not None and oauth.scopes == ["read"] and oauth.mode == "discover"


def test_static_oauth_is_a_client_with_fixed_endpoints() -> None:
    static = """\
public_base_url: https://gw.example.com
mcp:
  github:
    url: https://api.example.com/mcp/
    oauth:
      mode: static
      authorization_url: https://idp.example.com/authorize
      token_url: https://idp.example.com/token
      client_id: app
      client_secret: s3cret
      redirect_uri: https://gw.example.com/mcp/github/callback
      scopes: [repo]
"""
    oauth = load(OPENAI + AGENTS + static).mcp["github"].oauth
    assert oauth is not None
    assert (oauth.mode, oauth.token_url, oauth.client_secret) == (
        "static",
        "https://idp.example.com/token",
        "s3cret",
    )
    assert problems(OPENAI + AGENTS + static.replace("      token_url:", "      x_token_url:")) == [
        "mcp.github.oauth.token_url: required with mode 'static'"
    ]


# Triggers


TRIGGERS = """\
experiments: [{name: exp, strategy: split, variants: [{agent: a}, {agent: b}]}]
triggers:
  - {name: wakeup, type: boot, agent: a, prompt: Look around.}
  - {name: standup, type: cron, schedule: "0 9 * * 1-5", agent: a, prompt: Standup.}
  - name: pr-opened
    type: webhook
    path: /hooks/pr-opened
    agent: exp
    prompt: "Review {{repo}}#{{ number }} by @{{author}}."
"""


def test_coulisse_triggers_mean_our_kinds_with_the_default_user() -> None:
    config = load(OPENAI + AGENTS + "default_user_id: main\n" + TRIGGERS)
    kinds = {t.name: (t.kind, t.user, t.agent) for t in config.triggers}
    assert kinds == {
        "wakeup": ("on_start", "main", "a"),
        "standup": ("schedule", "main", "a"),
        "pr-opened": ("webhook", "main", "exp"),
    }
    hook = config.hook("pr-opened")
    assert hook is not None and hook.path == "/hooks/pr-opened"
    assert hook.webhook is not None and hook.webhook.secret == ""
    # Open: no secret, no auth.proxy.
    assert "anyone may call" in warned(config)["triggers[2].path"]


def test_a_coulisse_prompt_reads_the_payloads_fields() -> None:
    from inference.automation.triggers import message_of

    config = load(OPENAI + AGENTS + TRIGGERS)
    hook = config.hook("pr-opened")
    assert hook is not None and hook.user == "trigger:pr-opened"  # no default_user_id
    body = {"repo": "acme/api", "number": 7, "author": "ada"}
    assert message_of(hook, {"body": body}) == "Review acme/api#7 by @ada."


def test_a_coulisse_webhook_behind_auth_proxy_is_not_warned() -> None:
    config = load(
        OPENAI + AGENTS + TRIGGERS + "auth: {proxy: {basic: {username: u, password: p}}}\n"
    )
    assert "triggers[2].path" not in warned(config)


@pytest.mark.parametrize(
    ("trigger", "problem"),
    [
        (
            "{name: t, type: hourly, agent: a, prompt: p}",
            "triggers[0].type: must be one of cron, boot, webhook, got 'hourly'\n"
            "triggers[0]: must have exactly one of schedule, webhook or on_start: true",
        ),
        (
            "{name: t, type: webhook, path: /v1/t, agent: a, prompt: p}",
            "triggers[0].path: must be /hooks/<name> (names are 1 to 64 letters, digits, '.', "
            "'_', ':', '@' or '-', starting with a letter or a digit), got '/v1/t'",
        ),
        (
            "{name: t, type: cron, schedule: '0 9 * *', agent: a, prompt: p}",
            "triggers[0].schedule: '0 9 * *' is not a cron schedule of 5 fields "
            "(minute hour day month weekday)",
        ),
    ],
)
def test_a_wrong_coulisse_trigger_names_its_path(trigger: str, problem: str) -> None:
    assert problems(OPENAI + AGENTS + f"triggers:\n  - {trigger}\n") == problem.split("\n")


# Smoke tests


def test_a_coulisse_smoke_test_is_an_inline_persona_against_an_experiment() -> None:
    config = load(
        OPENAI
        + AGENTS
        + """\
experiments: [{name: exp, strategy: split, variants: [{agent: a}, {agent: b}]}]
smoke_tests:
  - name: angry
    target: exp
    repetitions: 4
    persona: {provider: openai, model: gpt-4o-mini, preamble: You are angry.}
    initial_message: I was double-charged.
    stop_marker: "[FIN]"
    max_turns: 8
  - name: quiet
    target: b
    persona: {provider: openai, model: gpt-4o-mini, preamble: Hi.}
"""
    )
    angry, quiet = config.smoke_tests
    assert (angry.agent, angry.opening, angry.turns, angry.repetitions, angry.stop_marker) == (
        "exp",
        "I was double-charged.",
        8,
        4,
        "[FIN]",
    )
    assert angry.judges == ["j"]  # its variants' judges
    persona = config.persona(angry)
    assert persona is not None
    assert (persona.model, persona.preamble, persona.history) == (
        "gpt-4o-mini",
        "You are angry.",
        False,
    )
    # Coulisse's defaults: ten turns, one repetition, the persona opens.
    assert (quiet.turns, quiet.repetitions, quiet.opening, quiet.judges) == (10, 1, None, [])


def test_a_coulisse_persona_on_an_unconfigured_provider_is_refused() -> None:
    text = "smoke_tests: [{name: s, target: a, persona: {provider: groq, model: m, preamble: p}}]\n"
    assert problems(OPENAI + AGENTS + text) == [
        "smoke_tests[0].persona.provider: provider 'groq' is not configured"
    ]


# max_turns, vars, identity


def test_max_turns_and_vars() -> None:
    config = load(
        OPENAI
        + """\
vars: {company: Initech, year: 2026}
agents:
  - name: a
    provider: openai
    model: m
    max_turns: 16
    preamble: "You work at ${vars.company} (since ${vars.year}); keep ${NOT_A_VAR:-this}."
"""
    )
    agent = config.agents[0]
    assert agent.max_turns == 16
    assert agent.preamble == "You work at Initech (since 2026); keep this."
    assert problems(
        OPENAI + "agents: [{name: a, provider: openai, model: m, preamble: '${vars.nope}'}]\n"
    ) == ["agents[0].preamble: ${vars.nope} is not defined under vars"]


def test_identity_from_credential_binds_the_user() -> None:
    basic = "basic: {username: u, password: p}"
    config = load(OPENAI + AGENTS + f"auth: {{proxy: {{{basic}, identity: from_credential}}}}\n")
    assert config.auth is not None and config.auth.proxy is not None
    assert config.auth.proxy.bind_user is True
    assert problems(
        OPENAI + AGENTS + f"auth: {{admin: {{{basic}, identity: from_credential}}}}\n"
    ) == ["auth.admin.identity: from_credential is for auth.proxy only"]


# telemetry, server, storage, keys without effect


def test_nested_telemetry_server_and_storage_map_to_ours() -> None:
    config = load(
        OPENAI
        + AGENTS
        + """\
telemetry:
  fmt: {enabled: true}
  sqlite: {enabled: false}
  otlp:
    endpoint: http://collector:4318
    protocol: http_binary
    service_name: coulisse-support
    headers: {authorization: Bearer t}
server: {bind: 127.0.0.1, port: 9000, max_body_bytes: 8388608, worker_threads: 4}
storage: {backend: local, max_file_bytes: 1048576, max_total_bytes: 1073741824}
sidecars: {}
auth: {mcp_consumer_secret: s, mcp_admin: {token: t}}
"""
    )
    telemetry = config.telemetry
    assert (telemetry.otlp_endpoint, telemetry.service_name, telemetry.store) == (
        "http://collector:4318",
        "coulisse-support",
        False,
    )
    assert telemetry.headers == {"authorization": "Bearer t"}
    assert (config.server.bind, config.server.port) == ("127.0.0.1", 9000)
    assert config.limits.max_body_mb == 8
    assert (config.files.max_file_mb, config.files.max_total_mb) == (1, 1024)
    assert config.auth is not None and config.auth.mcp_consumer_secret == "s"
    assert sorted(warned(config)) == [
        "auth.mcp_admin",
        "server.worker_threads",
        "sidecars",
        "telemetry.fmt",
    ]


def test_grpc_is_warned_and_s3_refused() -> None:
    grpc = load(
        OPENAI + AGENTS + "telemetry: {otlp: {endpoint: 'http://c:4317', protocol: grpc}}\n"
    )
    assert "OTLP/HTTP" in warned(grpc)["telemetry.otlp.protocol"]
    assert problems(OPENAI + AGENTS + "storage: {backend: s3}\n") == [
        "storage.backend: 's3' is not served here; files are kept on the local file system "
        "(files.dir)"
    ]


def test_our_own_keys_win_where_both_shapes_are_written() -> None:
    config = load(
        OPENAI
        + AGENTS
        + """\
limits: {max_body_mb: 3}
server: {max_body_bytes: 1048576}
telemetry: {otlp_endpoint: "http://ours:4318", otlp: {endpoint: "http://theirs:4318"}}
triggers:
  - {name: t, type: cron, schedule: "0 9 * * *", agent: a, prompt: theirs, message: ours, user: ops}
"""
    )
    assert config.limits.max_body_mb == 3
    assert config.telemetry.otlp_endpoint == "http://ours:4318"
    assert (config.triggers[0].message, config.triggers[0].user) == ("ours", "ops")


def test_check_config_prints_the_warnings_and_passes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "coulisse.yaml"
    path.write_text(OPENAI + AGENTS + "sidecars: {}\nserver: {worker_threads: 2}\n")
    call_command("check_config", str(path))
    out, err = capsys.readouterr()
    assert "OK (3 agents" in out
    assert err.splitlines() == [
        "warning: server.worker_threads: accepted without effect: the gateway's processes are "
        "set by serve --workers",
        "warning: sidecars: accepted without effect: the gateway starts no sidecar processes",
    ]
    path.write_text(OPENAI + AGENTS + "storage: {backend: s3}\n")
    with pytest.raises(CommandError):
        call_command("check_config", str(path))


# Admin writes


COULISSE_FILE = """\
# Written as a Coulisse user writes it.
memory:
  user_state: true   # long-term memory for every agent

vars:
  company: Initech

providers:
  openai:
    api_key: sk-test

mcp:
  docs:
    url: http://docs.internal:7000
    oauth: false   # trusts the caller

agents:
  - name: clerk
    provider: openai
    model: m
    max_turns: 4
    preamble: You answer for ${vars.company}.

# Proactive runs.
triggers:
  - name: standup
    type: cron
    schedule: "0 9 * * 1-5"
    agent: clerk
    prompt: Standup.

server:
  worker_threads: 4
"""


@pytest.mark.django_db
def test_an_admin_write_keeps_coulisse_sections_and_comments(tmp_path: Path) -> None:
    from agents import store
    from agents.resources import AGENTS
    from agents.snapshot import ConfigHolder

    path = tmp_path / "gateway.yaml"
    path.write_text(COULISSE_FILE)
    holder = ConfigHolder(path)
    assert holder.reload()

    store.create_item(
        holder, AGENTS, {"name": "second", "provider": "openai", "model": "m"}, store.Author("t")
    )

    text = path.read_text()
    added = "\n  - name: second\n    provider: openai\n    model: m\n\n# Proactive runs.\n"
    assert text == COULISSE_FILE.replace("\n\n# Proactive runs.\n", added)
    config = holder.config
    assert config is not None
    # The new agent means what user_state says, as the others do.
    memories = [agent.memory for agent in config.agents]
    assert all(memory is not None and memory.embedder == "memory:embedder" for memory in memories)
    assert config.agents[0].preamble == "You answer for Initech."
    assert [t.kind for t in config.triggers] == ["schedule"]
