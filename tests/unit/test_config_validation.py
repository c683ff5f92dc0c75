"""Each validation rule of the config (docs/configuration.md), with a config that breaks exactly that rule."""

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from agents.loader import ConfigError, load_config_data, load_config_text
from tests.configs import ORIGINAL_EXAMPLE, ORIGINAL_STARTER


def valid_config() -> dict[str, Any]:
    return {
        "default_user_id": "main",
        "providers": {"openai": {"api_key": "sk-1"}, "anthropic": {"api_key": "sk-2"}},
        "agents": [
            {
                "name": "support",
                "provider": "openai",
                "model": "gpt-4.1-mini",
                "judges": ["quality"],
                "subagents": ["billing"],
                "mcp_tools": [{"server": "docs"}, {"server": "files", "only": ["read_file"]}],
            },
            {"name": "billing", "provider": "anthropic", "model": "claude", "judges": ["quality"]},
            {"name": "other", "provider": "openai", "model": "gpt", "judges": ["quality"]},
        ],
        "judges": [
            {
                "name": "quality",
                "provider": "anthropic",
                "model": "claude-haiku",
                "sampling_rate": 0.5,
                "rubrics": {"accuracy": "Factual accuracy.", "helpfulness": "Answered?"},
            }
        ],
        "experiments": [
            {
                "name": "split-exp",
                "strategy": "split",
                "variants": [{"agent": "support", "weight": 0.5}, {"agent": "other"}],
            },
            {
                "name": "shadow-exp",
                "strategy": "shadow",
                "primary": "support",
                "sampling_rate": 0.2,
                "variants": [{"agent": "support"}, {"agent": "other"}],
            },
            {
                "name": "bandit-exp",
                "strategy": "bandit",
                "metric": "quality.accuracy",
                "epsilon": 0.1,
                "min_samples": 30,
                "bandit_window_seconds": 3600,
                "variants": [{"agent": "support"}, {"agent": "billing"}],
            },
        ],
        "mcp": {
            "docs": {"transport": "http", "url": "http://127.0.0.1:9000/mcp"},
            "files": {"transport": "stdio", "command": "python", "args": ["-m", "files"]},
        },
        "auth": {
            "proxy": {"basic": {"username": "admin", "password": "secret"}},
            "admin": {"oidc": {"issuer_url": "https://idp.example.com/", "client_id": "gw"}},
        },
        "history": {"max_messages": 10, "max_tokens": 1000},
        "structured_output": {"max_repairs": 1},
    }


def problems_after(change: Callable[[dict[str, Any]], None]) -> list[str]:
    data = copy.deepcopy(valid_config())
    change(data)
    with pytest.raises(ConfigError) as raised:
        load_config_data(data)
    return raised.value.problems


def test_valid_config_loads_every_section() -> None:
    config = load_config_data(valid_config())
    assert [agent.name for agent in config.agents] == ["support", "billing", "other"]
    assert config.judges[0].rubrics["accuracy"] == "Factual accuracy."
    assert config.experiments[2].metric == "quality.accuracy"
    assert config.mcp["files"].args == ["-m", "files"]
    assert config.auth is not None and config.auth.proxy is not None
    assert config.history.max_messages == 10
    assert config.structured_output.max_repairs == 1


def _set(path: str, value: Any) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = data
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        if last.isdigit():
            target[int(last)] = value
        else:
            target[last] = value

    return change


def _delete(path: str) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = data
        for part in parents:
            target = target[int(part)] if part.isdigit() else target[part]
        del target[last]

    return change


def _rename_bandit_experiment_after_a_new_agent(data: dict[str, Any]) -> None:
    data["agents"].append({"name": "solo", "provider": "openai", "model": "m"})
    data["experiments"][2]["name"] = "solo"


def _with_memory(memory: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    def change(data: dict[str, Any]) -> None:
        data["embedders"] = [{"name": "embed", "provider": "openai", "model": "m"}]
        data["agents"][0]["memory"] = memory

    return change


def _solo_cached(cache: dict[str, Any], **agent: Any) -> Callable[[dict[str, Any]], None]:
    """A new agent (no experiment uses it) with ``cache`` and the fields ``agent`` gives."""

    def change(data: dict[str, Any]) -> None:
        data["agents"].append(
            {"name": "solo", "provider": "openai", "model": "m", "cache": cache, **agent}
        )

    return change


def _with_objective(objective: dict[str, Any]) -> Callable[[dict[str, Any]], None]:
    """The bandit's metric given as its objective's."""

    def change(data: dict[str, Any]) -> None:
        del data["experiments"][2]["metric"]
        data["experiments"][2]["objective"] = objective

    return change


def _empty_rubrics_without_the_bandit(data: dict[str, Any]) -> None:
    data["judges"][0]["rubrics"] = {}
    data["experiments"].pop()  # its metric would name a criterion that no longer exists


RULES: list[tuple[str, Callable[[dict[str, Any]], None], str]] = [
    (
        "no agents",
        lambda d: d.update(agents=[], experiments=[]),
        "agents: at least one agent must be configured",
    ),
    (
        "blank default_user_id",
        _set("default_user_id", "  "),
        "default_user_id: must not be blank (remove it to require safety_identifier)",
    ),
    (
        "duplicate agent name",
        lambda d: d["agents"].append({"name": "other", "provider": "openai", "model": "m"}),
        "agents[3].name: duplicate name 'other'",
    ),
    (
        "blank agent name",
        lambda d: d["agents"].append({"name": " ", "provider": "openai", "model": "m"}),
        "agents[3].name: must not be blank",
    ),
    (
        "duplicate judge name",
        lambda d: d["judges"].append(copy.deepcopy(d["judges"][0])),
        "judges[1].name: duplicate name 'quality'",
    ),
    (
        "duplicate experiment name",
        lambda d: d["experiments"].append(copy.deepcopy(d["experiments"][0])),
        "experiments[3].name: duplicate name 'split-exp'",
    ),
    (
        "experiment named like an agent",
        _rename_bandit_experiment_after_a_new_agent,
        "experiments[2].name: 'solo' is already an agent name "
        "(agents and experiments share one namespace)",
    ),
    (
        "unknown provider kind",
        lambda d: d["providers"].update(mistral={"api_key": "x"}),
        "providers.mistral: 'mistral' is not a provider kind, so the provider needs kind: "
        "(one of anthropic, cohere, deepseek, gemini, groq, openai)",
    ),
    (
        "agent provider not configured",
        _set("agents.2.provider", "cohere"),
        "agents[2].provider: provider 'cohere' is not configured",
    ),
    (
        "deployment provider not configured",
        _set("agents.2.deployments", [{"provider": "azure", "model": "m"}]),
        "agents[2].deployments[0].provider: provider 'azure' is not configured",
    ),
    (
        "fallback provider not configured",
        _set("judges.0.fallbacks", [{"provider": "openai"}, {"provider": "azure", "model": "m"}]),
        "judges[0].fallbacks[0].model: field required",
    ),
    (
        "provider timeout not positive",
        _set("providers.openai.timeout", -1),
        "providers.openai.timeout: must be a finite number greater than 0, got -1.0",
    ),
    (
        "retries not negative",
        _set("providers.openai.retries", {"attempts": -1}),
        "providers.openai.retries.attempts: input should be greater than or equal to 0",
    ),
    (
        "deployment weight finite",
        _set(
            "agents.0.deployments", [{"provider": "openai", "model": "m", "weight": float("inf")}]
        ),
        "agents[0].deployments[0].weight: input should be a finite number",
    ),
    (
        "pricing key without a model",
        _set("pricing", {"openai": {"input": 1, "output": 2}}),
        "pricing.openai: the key must be <provider name>/<model>",
    ),
    (
        "pricing of an unknown provider",
        _set("pricing", {"azure/gpt-x": {"input": 1, "output": 2}}),
        "pricing.azure/gpt-x: provider 'azure' is not configured",
    ),
    (
        "price not negative",
        _set("pricing", {"openai/ft": {"input": -1, "output": 2}}),
        "pricing.openai/ft.input: input should be greater than or equal to 0",
    ),
    (
        "price needs output",
        _set("pricing", {"openai/ft": {"input": 1}}),
        "pricing.openai/ft.output: field required",
    ),
    (
        "judge provider not configured",
        _set("judges.0.provider", "gemini"),
        "judges[0].provider: provider 'gemini' is not configured",
    ),
    (
        "agent judge not defined",
        _set("agents.2.judges", ["quality", "tone"]),
        "agents[2].judges[1]: judge 'tone' is not defined",
    ),
    (
        "subagent not defined",
        _set("agents.0.subagents", ["billing", "ghost"]),
        "agents[0].subagents[1]: agent or experiment 'ghost' is not defined",
    ),
    (
        "subagent is itself",
        _set("agents.2.subagents", ["other"]),
        "agents[2].subagents[0]: an agent cannot be its own subagent",
    ),
    (
        "mcp server not defined",
        _set("agents.1.mcp_tools", [{"server": "search"}]),
        "agents[1].mcp_tools[0].server: MCP server 'search' is not defined",
    ),
    (
        "mcp only empty",
        _set("agents.0.mcp_tools.1.only", []),
        "agents[0].mcp_tools[1].only: must list at least one tool (or be omitted)",
    ),
    (
        "judge without rubrics",
        _empty_rubrics_without_the_bandit,
        "judges[0].rubrics: must define at least one criterion",
    ),
    (
        "judge rubric blank",
        _set("judges.0.rubrics.helpfulness", " "),
        "judges[0].rubrics.helpfulness: must describe what to assess",
    ),
    (
        "judge sampling rate above 1",
        _set("judges.0.sampling_rate", 1.5),
        "judges[0].sampling_rate: must be between 0 and 1, got 1.5",
    ),
    (
        "judge sampling rate negative",
        _set("judges.0.sampling_rate", -0.1),
        "judges[0].sampling_rate: must be between 0 and 1, got -0.1",
    ),
    (
        "experiment without variants",
        _set("experiments.0.variants", []),
        "experiments[0].variants: must list at least one variant",
    ),
    (
        "variant agent not defined",
        _set("experiments.0.variants.1", {"agent": "ghost"}),
        "experiments[0].variants[1].agent: agent 'ghost' is not defined",
    ),
    (
        "variant is an experiment",
        _set("experiments.0.variants.1", {"agent": "shadow-exp"}),
        "experiments[0].variants[1].agent: 'shadow-exp' is an experiment (variants must be agents)",
    ),
    (
        "variant listed twice",
        _set("experiments.0.variants.1", {"agent": "support"}),
        "experiments[0].variants[1].agent: 'support' is listed twice",
    ),
    (
        "variant weight zero",
        _set("experiments.0.variants.0.weight", 0),
        "experiments[0].variants[0].weight: must be a finite number greater than 0, got 0.0",
    ),
    (
        "variant weight infinite",
        _set("experiments.0.variants.0.weight", float("inf")),
        "experiments[0].variants[0].weight: must be a finite number greater than 0, got inf",
    ),
    (
        "shadow field on a split experiment",
        _set("experiments.0.primary", "support"),
        "experiments[0].primary: only allowed with strategy 'shadow'",
    ),
    (
        "bandit field on a shadow experiment",
        _set("experiments.1.epsilon", 0.2),
        "experiments[1].epsilon: only allowed with strategy 'bandit'",
    ),
    (
        "shadow without primary",
        _delete("experiments.1.primary"),
        "experiments[1].primary: required with strategy 'shadow'",
    ),
    (
        "shadow primary not a variant",
        _set("experiments.1.primary", "billing"),
        "experiments[1].primary: 'billing' is not one of the variants",
    ),
    (
        "shadow sampling rate out of range",
        _set("experiments.1.sampling_rate", 2),
        "experiments[1].sampling_rate: must be between 0 and 1, got 2.0",
    ),
    (
        "bandit without metric",
        _delete("experiments.2.metric"),
        "experiments[2].metric: required with strategy 'bandit' (as judge.criterion)",
    ),
    (
        "bandit metric not judge.criterion",
        _set("experiments.2.metric", "quality.tone"),
        "experiments[2].metric: 'quality.tone' is not a judge.criterion of a defined judge",
    ),
    (
        "bandit metric judge not used by a variant",
        _set("agents.1.judges", []),
        "experiments[2].metric: variant agent 'billing' does not use judge 'quality'",
    ),
    (
        "bandit epsilon out of range",
        _set("experiments.2.epsilon", 1.5),
        "experiments[2].epsilon: must be between 0 and 1, got 1.5",
    ),
    (
        "bandit min_samples negative",
        _set("experiments.2.min_samples", -1),
        "experiments[2].min_samples: must not be negative",
    ),
    (
        "objective on a split experiment",
        _set("experiments.0.objective", {"metric": "quality.accuracy"}),
        "experiments[0].objective: only allowed with strategy 'bandit'",
    ),
    (
        "objective metric differs from metric",
        _set("experiments.2.objective", {"metric": "quality.helpfulness", "cost_weight": 10}),
        "experiments[2].metric: 'quality.accuracy' differs from objective.metric "
        "'quality.helpfulness' (objective.metric replaces metric)",
    ),
    (
        "objective metric not judge.criterion",
        _with_objective({"metric": "quality.tone", "cost_weight": 10}),
        "experiments[2].objective.metric: 'quality.tone' is not a judge.criterion of a "
        "defined judge",
    ),
    (
        "objective cost weight negative",
        _with_objective({"metric": "quality.accuracy", "cost_weight": -1}),
        "experiments[2].objective.cost_weight: input should be greater than or equal to 0",
    ),
    (
        "max_cost_usd not positive",
        _set("experiments.2.max_cost_usd", 0),
        "experiments[2].max_cost_usd: input should be greater than 0",
    ),
    (
        "bandit window not positive",
        _set("experiments.2.bandit_window_seconds", 0),
        "experiments[2].bandit_window_seconds: must be greater than 0",
    ),
    (
        "stdio mcp server without command",
        _delete("mcp.files.command"),
        "mcp.files.command: required with transport 'stdio'",
    ),
    (
        "http mcp server without url",
        _delete("mcp.docs.url"),
        "mcp.docs.url: required with transport 'http'",
    ),
    (
        "auth scope with both methods",
        _set("auth.proxy.oidc", {"issuer_url": "https://idp/", "client_id": "gw"}),
        "auth.proxy: must configure exactly one of basic or oidc",
    ),
    (
        "auth scope with no method",
        _set("auth.admin", {}),
        "auth.admin: must configure exactly one of basic or oidc",
    ),
    (
        "basic auth blank password",
        _set("auth.proxy.basic.password", ""),
        "auth.proxy.basic.password: must not be blank",
    ),
    (
        "oidc blank client_id",
        _set("auth.admin.oidc.client_id", " "),
        "auth.admin.oidc.client_id: must not be blank",
    ),
    (
        "missing required field",
        _delete("agents.1.model"),
        "agents[1].model: field required",
    ),
    (
        "wrong field type",
        _set("judges.0.sampling_rate", "often"),
        "judges[0].sampling_rate: input should be a valid number, unable to parse string as a number",
    ),
    (
        "unknown strategy",
        _set("experiments.0.strategy", "roulette"),
        "experiments[0].strategy: input should be 'split', 'shadow' or 'bandit'",
    ),
    (
        "embedder named like an agent",
        _set("embedders", [{"name": "support", "provider": "openai", "model": "e"}]),
        "embedders[0].name: 'support' is already an agent or experiment name "
        "(all three are models of /v1/models)",
    ),
    (
        "embedder on an unknown provider",
        _set("embedders", [{"name": "embed", "provider": "mistral", "model": "e"}]),
        "embedders[0].provider: provider 'mistral' is not configured",
    ),
    (
        "embedder on a kind without embeddings",
        _set("embedders", [{"name": "embed", "provider": "anthropic", "model": "e"}]),
        "embedders[0].provider: provider 'anthropic' is of kind anthropic, which serves no "
        "embeddings (the kinds that do: openai, groq, deepseek, gemini, cohere)",
    ),
    (
        "memory with an unknown embedder",
        _set("agents.0.memory", {"embedder": "nope"}),
        "agents[0].memory.embedder: embedder 'nope' is not defined",
    ),
    (
        "memory with an unknown extractor",
        _with_memory({"embedder": "embed", "extractor": "ghost"}),
        "agents[0].memory.extractor: agent 'ghost' is not defined",
    ),
    (
        "memory recall below 1",
        _set("agents.0.memory", {"embedder": "x", "recall": 0}),
        "agents[0].memory.recall: input should be greater than or equal to 1",
    ),
    (
        "memory dedup above 1",
        _set("agents.0.memory", {"embedder": "x", "dedup": 1.5}),
        "agents[0].memory.dedup: input should be less than or equal to 1",
    ),
    (
        "duplicate embedder name",
        _set(
            "embedders",
            [
                {"name": "embed", "provider": "openai", "model": "a"},
                {"name": "embed", "provider": "openai", "model": "b"},
            ],
        ),
        "embedders[1].name: duplicate name 'embed'",
    ),
    (
        "alias of nothing configured",
        _set("aliases", {"claude-*": "coder"}),
        "aliases['claude-*']: 'coder' is not an agent, experiment or embedder",
    ),
    (
        "alias that is a configured name",
        _set("aliases", {"billing": "support"}),
        "aliases['billing']: 'billing' is an agent, experiment or embedder already",
    ),
    (
        "star inside an alias",
        _set("aliases", {"gemini-*-lite": "support"}),
        "aliases['gemini-*-lite']: '*' may only end an alias (a prefix)",
    ),
    (
        "semantic cache without an embedder",
        _solo_cached({"mode": "semantic"}, history=False),
        "agents[3].cache.embedder: required with mode 'semantic'",
    ),
    (
        "cache with an unknown embedder",
        _solo_cached({"mode": "semantic", "embedder": "nope"}, history=False),
        "agents[3].cache.embedder: embedder 'nope' is not defined",
    ),
    (
        "global cache of an agent with history",
        _solo_cached({"mode": "exact", "scope": "global"}),
        "agents[3].cache.scope: 'global' needs history: false and no memory (an answer "
        "would carry one user's conversation to another)",
    ),
    (
        "min_score without a judge",
        _solo_cached({"mode": "exact", "min_score": 5}),
        "agents[3].cache.min_score: needs a judge on the agent (its scores decide)",
    ),
    (
        "cache without a mode",
        _solo_cached({"ttl": 60}),
        "agents[3].cache.mode: field required",
    ),
    (
        "cache ttl not an integer",
        _solo_cached({"mode": "exact", "ttl": 2.5}),
        "agents[3].cache.ttl: input should be a valid integer, got a number with a fractional part",
    ),
    (
        "cache similarity above 1",
        _solo_cached({"mode": "exact", "similarity": 1.5}),
        "agents[3].cache.similarity: input should be less than or equal to 1",
    ),
    (
        "unknown cache scope",
        _solo_cached({"mode": "exact", "scope": "team"}),
        "agents[3].cache.scope: input should be 'user', 'key' or 'global'",
    ),
    (
        "unknown cache gate",
        _solo_cached({"mode": "semantic", "embedder": "embed", "gate": "loose"}, history=False),
        "agents[3].cache.gate: input should be 'strict' or 'off'",
    ),
    (
        "max_entries below 1",
        _set("cache", {"max_entries": 0}),
        "cache.max_entries: input should be greater than or equal to 1",
    ),
    (
        "evaluations concurrency below 1",
        _set("evaluations", {"concurrency": 0}),
        "evaluations.concurrency: input should be greater than or equal to 1",
    ),
    (
        "evaluations concurrency not an integer",
        _set("evaluations", {"concurrency": 1.5}),
        "evaluations.concurrency: input should be a valid integer, got a number with a "
        "fractional part",
    ),
    (
        "max_tools below 1",
        _set("limits", {"max_tools": 0}),
        "limits.max_tools: input should be greater than or equal to 1",
    ),
    (
        "max_tools not an integer",
        _set("limits", {"max_tools": 2.5}),
        "limits.max_tools: input should be a valid integer, got a number with a fractional part",
    ),
    (
        "billing on a kind without a billing API",
        lambda d: d["providers"].update(groq={"billing": {"admin_key": "gsk-admin"}}),
        "providers.groq.billing: provider 'groq' is of kind groq, whose bills the gateway "
        "cannot read (the kinds it can: openai, anthropic)",
    ),
    (
        "native batches on a kind without a batch API",
        lambda d: d["providers"].update(groq={"batch": "native"}),
        "providers.groq.batch: provider 'groq' is of kind groq, which has no batch API the "
        "gateway speaks (native batches: openai, anthropic)",
    ),
    (
        "batch neither gateway nor native",
        _set("providers.openai.batch", "provider"),
        "providers.openai.batch: input should be 'gateway' or 'native'",
    ),
    (
        "billing without an admin key",
        _set("providers.openai.billing", {"project": "proj_abc"}),
        "providers.openai.billing.admin_key: field required",
    ),
    (
        "billing admin key blank",
        _set("providers.anthropic.billing", {"admin_key": " "}),
        "providers.anthropic.billing.admin_key: must not be blank",
    ),
    (
        "billing project blank",
        _set("providers.openai.billing", {"admin_key": "sk-admin-1", "project": ""}),
        "providers.openai.billing.project: must not be blank (remove it to compare the whole "
        "organization)",
    ),
    (
        "reconciliation days below 1",
        _set("reconciliation", {"days": 0}),
        "reconciliation.days: input should be greater than or equal to 1",
    ),
    (
        "reconciliation alert_pct negative",
        _set("reconciliation", {"alert_pct": -1}),
        "reconciliation.alert_pct: input should be greater than or equal to 0",
    ),
    (
        "max_upstream_body_mb not above 0",
        _set("limits", {"max_upstream_body_mb": 0}),
        "limits.max_upstream_body_mb: input should be greater than 0",
    ),
    (
        "webhook_max_body_kb infinite",
        _set("limits", {"webhook_max_body_kb": float("inf")}),
        "limits.webhook_max_body_kb: input should be a finite number",
    ),
    (
        "max_body_mb infinite",
        _set("limits", {"max_body_mb": float("inf")}),
        "limits.max_body_mb: input should be a finite number",
    ),
    (
        "max_pdf_pages below 1",
        _set("files", {"max_pdf_pages": 0}),
        "files.max_pdf_pages: input should be greater than or equal to 1",
    ),
    (
        "max_pdf_pages not an integer",
        _set("files", {"max_pdf_pages": 2.5}),
        "files.max_pdf_pages: input should be a valid integer, got a number with a fractional part",
    ),
    (
        "max_text_mb not above 0",
        _set("files", {"max_text_mb": -1}),
        "files.max_text_mb: input should be greater than 0",
    ),
]


@pytest.mark.parametrize(("rule", "change", "message"), RULES, ids=[rule[0] for rule in RULES])
def test_rule_reports_the_path_named_problem(
    rule: str, change: Callable[[dict[str, Any]], None], message: str
) -> None:
    assert problems_after(change) == [message]


def test_a_provider_named_freely_with_its_kind_and_policies_is_valid() -> None:
    data = copy.deepcopy(valid_config())
    data["providers"]["openai-eu"] = {
        "kind": "openai",
        "timeout": {"connect": 1, "first_byte": 5},
        "retries": {"attempts": 0},
        "circuit": {"failures": 0},
    }
    data["agents"][0]["deployments"] = [{"provider": "openai-eu", "model": "m", "weight": 2}]

    config = load_config_data(data)

    assert config.provider_kind("openai-eu") == "openai"
    assert config.providers["openai-eu"].timeouts.first_byte == 5
    assert config.providers["openai-eu"].timeouts.total == 600


def test_billing_and_reconciliation_load_with_their_defaults() -> None:
    data = copy.deepcopy(valid_config())
    data["providers"]["openai"]["billing"] = {"admin_key": "sk-admin-1", "project": "proj_abc"}
    data["providers"]["anthropic"]["billing"] = {"admin_key": "sk-ant-admin01-1"}

    config = load_config_data(data)

    billing = config.providers["openai"].billing
    assert billing is not None and (billing.admin_key, billing.project) == (
        "sk-admin-1",
        "proj_abc",
    )
    assert config.providers["anthropic"].billing is not None
    assert config.providers["anthropic"].billing.project is None
    assert (config.reconciliation.days, config.reconciliation.alert_pct) == (7, 5)


def test_no_providers_is_reported_first() -> None:
    problems = problems_after(lambda data: data.update(providers={}))
    assert problems[0] == "providers: at least one provider must be configured"
    assert "agents[0].provider: provider 'openai' is not configured" in problems


def test_subagent_cycle_names_both_agents() -> None:
    def cycle(data: dict[str, Any]) -> None:
        data["agents"][1]["subagents"] = ["support"]

    assert problems_after(cycle) == [
        "agents[0].subagents[0]: 'billing' leads back to 'support' (subagents must not form a cycle)",
        "agents[1].subagents[0]: 'support' leads back to 'billing' (subagents must not form a cycle)",
    ]


def test_subagent_cycle_through_an_experiment() -> None:
    def cycle(data: dict[str, Any]) -> None:
        data["agents"][2]["subagents"] = ["split-exp"]

    assert problems_after(cycle) == [
        "agents[2].subagents[0]: 'split-exp' leads back to 'other' (subagents must not form a cycle)"
    ]


def test_every_problem_is_reported_at_once() -> None:
    def break_three(data: dict[str, Any]) -> None:
        data["agents"][2]["provider"] = "groq"
        data["judges"][0]["sampling_rate"] = 3
        data["default_user_id"] = ""

    assert len(problems_after(break_three)) == 3


def test_unknown_sections_and_keys_are_accepted() -> None:
    data = valid_config()
    data["telemetry"] = {"fmt": {"enabled": True}}
    data["agents"][0]["temperature_hint"] = 0.2
    config = load_config_data(data)
    assert config.agents[0].name == "support"


def test_environment_references_are_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GW_TEST_KEY", "sk-from-env")
    monkeypatch.delenv("GW_TEST_MISSING", raising=False)
    config = load_config_text(
        "providers:\n"
        "  openai: {api_key: '${GW_TEST_KEY}', base_url: '${GW_TEST_MISSING:-http://fallback/v1}'}\n"
        "agents: [{name: a, provider: openai, model: m}]\n"
    )
    assert config.providers["openai"].api_key == "sk-from-env"
    assert config.providers["openai"].base_url == "http://fallback/v1"


def test_missing_environment_variable_is_a_path_named_problem(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("GW_TEST_MISSING", raising=False)
    with pytest.raises(ConfigError) as raised:
        load_config_text(
            "providers: {openai: {api_key: '${GW_TEST_MISSING}'}}\n"
            "agents: [{name: a, provider: openai, model: m}]\n"
        )
    assert raised.value.problems == [
        "providers.openai.api_key: environment variable GW_TEST_MISSING is not set"
    ]


def test_yaml_syntax_error_is_reported() -> None:
    with pytest.raises(ConfigError) as raised:
        load_config_text("providers: {openai: [\nagents: -")
    assert raised.value.problems[0].startswith("(file): not valid YAML")


def test_top_level_must_be_a_mapping() -> None:
    with pytest.raises(ConfigError) as raised:
        load_config_text("- just\n- a list\n")
    assert raised.value.problems == ["(file): the config must be a mapping of sections"]


@pytest.mark.parametrize("path", [ORIGINAL_EXAMPLE, ORIGINAL_STARTER], ids=["example", "starter"])
def test_configs_of_the_original_service_load_unchanged(path: Path) -> None:
    config = load_config_text(path.read_text())
    assert config.agents


@pytest.mark.parametrize("name", ["gateway.example.yaml", "demo.yaml"])
def test_shipped_example_configs_are_valid(name: str, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-the-environment")
    path = Path(__file__).resolve().parents[2] / "examples" / name
    assert load_config_text(path.read_text()).agents


def test_example_config_names_the_key_it_needs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    path = Path(__file__).resolve().parents[2] / "examples" / "gateway.example.yaml"
    with pytest.raises(ConfigError) as raised:
        load_config_text(path.read_text())
    assert raised.value.problems == [
        "providers.openai.api_key: environment variable OPENAI_API_KEY is not set"
    ]


def test_every_stage_reports_its_problems(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unset variable does not hide type errors, nor these the rules of other entries."""
    monkeypatch.delenv("GW_TEST_MISSING", raising=False)
    data = valid_config()
    data["providers"]["openai"]["api_key"] = "${GW_TEST_MISSING}"
    data["judges"][0]["sampling_rate"] = "often"  # a type error: the judge is left out...
    data["agents"].insert(0, {"name": "broken", "provider": "openai"})  # ...and this agent
    data["agents"][1]["provider"] = "cohere"  # a reference error in a well-typed agent

    with pytest.raises(ConfigError) as raised:
        load_config_data(data)
    problems = raised.value.problems

    assert problems == [
        "providers.openai.api_key: environment variable GW_TEST_MISSING is not set",
        "agents[0].model: field required",
        "judges[0].sampling_rate: input should be a valid number, unable to parse string as a number",
        "agents[1].provider: provider 'cohere' is not configured",
    ]


def test_yaml_error_names_the_line_without_quoting_it() -> None:
    with pytest.raises(ConfigError) as raised:
        load_config_text("providers:\n  openai: {api_key: sk-secret-0123456789}: x\n")
    (problem,) = raised.value.problems
    assert problem.startswith("(file): not valid YAML: line 2, column ")
    assert "sk-secret" not in problem and "unicode string" not in problem


def test_empty_environment_variable_is_a_problem_unless_a_default_allows_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("GW_TEST_EMPTY", "")
    with pytest.raises(ConfigError) as raised:
        load_config_text(
            "providers: {openai: {api_key: '${GW_TEST_EMPTY}'}}\n"
            "agents: [{name: a, provider: openai, model: m}]\n"
        )
    assert raised.value.problems == [
        "providers.openai.api_key: environment variable GW_TEST_EMPTY is empty"
    ]
    config = load_config_text(
        "providers: {openai: {api_key: '${GW_TEST_EMPTY:-}', base_url: '${GW_TEST_EMPTY:-http://x}'}}\n"
        "agents: [{name: a, provider: openai, model: m}]\n"
    )
    assert (config.providers["openai"].api_key, config.providers["openai"].base_url) == (
        "",
        "http://x",
    )


@pytest.mark.parametrize("written", ["*{}", "!{} value", "[{}", "{{{}: x}}: y"])
def test_yaml_error_on_a_secret_line_masks_what_it_quotes(written: str) -> None:
    secret = "sk-secret-0123456789abcdef"
    with pytest.raises(ConfigError) as raised:
        load_config_text(f"providers:\n  openai:\n    api_key: {written.format(secret)}\n")
    (problem,) = raised.value.problems
    assert problem.startswith("(file): not valid YAML: line ")
    assert secret not in problem and "sk-secret" not in problem


def test_yaml_error_on_an_admin_key_line_masks_what_it_quotes() -> None:
    secret = "sk-admin-0123456789abcdef"
    with pytest.raises(ConfigError) as raised:
        load_config_text(f"providers:\n  openai:\n    billing: {{admin_key: *{secret}}}\n")
    (problem,) = raised.value.problems
    assert problem.startswith("(file): not valid YAML: line ")
    assert secret not in problem and "sk-admin" not in problem


def test_validation_messages_mask_billing_admin_keys() -> None:
    data = valid_config()
    admin_key = "sk-admin-0123456789abcdef"
    data["providers"]["groq"] = {"billing": {"admin_key": admin_key}}
    data["agents"][0]["provider"] = admin_key

    with pytest.raises(ConfigError) as raised:
        load_config_data(data)

    assert admin_key not in "\n".join(raised.value.problems)
    assert "agents[0].provider: provider 'sk-…cdef' is not configured" in raised.value.problems


def test_validation_messages_mask_secret_values() -> None:
    data = valid_config()
    data["auth"] = {"proxy": {"basic": {"username": "a", "password": "hunter2-hunter2"}}}
    data["agents"][0]["provider"] = "hunter2-hunter2"

    with pytest.raises(ConfigError) as raised:
        load_config_data(data)

    assert raised.value.problems == ["agents[0].provider: provider '********' is not configured"]


@pytest.mark.parametrize(
    "name", ["a/b", "<script>alert(1)</script>", "-lead", "a b", "ünï", "x" * 65, "a?b", "a#b"]
)
@pytest.mark.parametrize("section", ["agents", "judges", "experiments", "mcp"])
def test_name_outside_the_url_safe_pattern_is_reported(section: str, name: str) -> None:
    def rename(data: dict[str, Any]) -> None:
        if section == "mcp":
            data["mcp"][name] = data["mcp"].pop("docs")
        else:
            data[section][-1]["name"] = name

    problems = problems_after(rename)

    path = (
        "mcp." + name if section == "mcp" else f"{section}[{len(valid_config()[section]) - 1}].name"
    )
    assert f"{path}: {name!r} is not a valid name (names are 1 to 64 letters" in problems[0]


@pytest.mark.parametrize("name", ["a", "gpt-4o:mini@v1.2_x", "0" * 64])
def test_names_inside_the_pattern_are_valid(name: str) -> None:
    data = valid_config()
    data["agents"].append({"name": name, "provider": "openai", "model": "m"})
    data["mcp"][name] = data["mcp"].pop("files")
    data["agents"][0]["mcp_tools"][1]["server"] = name

    load_config_data(data)


@pytest.mark.parametrize("value", ["!!int sk-not-a-number", "!!timestamp 2020-99-99"])
def test_yaml_value_unlike_its_tag_is_a_problem_that_never_quotes_it(value: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load_config_text(f"providers: {{openai: {{api_key: {value}}}}}\n")
    (problem,) = raised.value.problems
    assert problem.startswith("(file): not valid YAML")
    assert value.split()[1] not in problem


def test_api_keys_switch_on_alone_or_as_the_original_formats_tokens() -> None:
    proxies: list[dict[str, Any]] = [
        {"api_keys": True},
        {"tokens": {}},
        {"api_keys": True, "basic": {"password": "p"}},
    ]
    for proxy in proxies:
        data = copy.deepcopy(valid_config())
        data["auth"] = {"proxy": proxy}
        config = load_config_data(data)
        assert config.proxy_auth is not None and config.proxy_auth.takes_api_keys
    assert problems_after(lambda data: data.update(auth={"admin": {"api_keys": True}})) == [
        "auth.admin.api_keys: API keys are for auth.proxy only"
    ]


def test_an_alias_resolves_exact_first_then_the_longest_prefix_and_names_win() -> None:
    data = valid_config()
    data["aliases"] = {
        "*": "other",
        "gemini-*": "billing",
        "gemini-2.5-*": "support",
        "gemini-2.5-flash-lite": "other",
    }
    config = load_config_data(data)

    assert config.target("gemini-2.5-flash-lite") == "other"
    assert config.target("gemini-2.5-pro") == "support"
    assert config.target("gemini-3-pro") == "billing"
    assert config.target("gpt-4o") == "other"
    assert config.target("support") == "support"
