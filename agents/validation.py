"""Cross-validation of a parsed config: the rules that span fields and sections, and
the warnings of a config that loads (``unknown_keys``).

Every message starts with the path of the offending value (``agents[2].provider: …``)
so the admin, ``check_config`` and the reload log all say the same thing.
"""

import difflib
import math
import re
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import urlsplit

from django.template import Engine, TemplateSyntaxError
from pydantic import BaseModel

from agents.schema import (
    AgentConfig,
    AuthScope,
    Config,
    ConfigWarning,
    EmbedderConfig,
    ExperimentConfig,
    JudgeConfig,
    McpOAuthConfig,
    Upstream,
)
from agents.skills.catalog import DEFAULT_DIR as DEFAULT_SKILLS_DIR
from core.providerkinds import (
    BILLING_KINDS,
    EMBEDDING_KINDS,
    KIND_NAMES,
    NATIVE_BATCH_KINDS,
    PROVIDER_KINDS,
)


def cross_validate(config: Config) -> list[str]:
    return [
        *_check_sections(config),
        *_check_names(config),
        *_check_providers(config),
        *_check_billing(config),
        *_check_native_batches(config),
        *_check_agents(config),
        *_check_subagent_cycles(config),
        *_check_judges(config),
        *_check_experiments(config),
        *_check_mcp(config),
        *_check_auth(config),
        *_check_pricing(config),
        *_check_embedders(config),
        *_check_memory(config),
        *_check_caches(config),
        *_check_aliases(config),
        *_check_skills(config),
        *_check_triggers(config),
        *_check_smoke_tests(config),
        *_check_guardrails(config),
    ]


def _check_sections(config: Config) -> Iterator[str]:
    if not config.providers:
        yield "providers: at least one provider must be configured"
    if not config.agents:
        yield "agents: at least one agent must be configured"
    if config.default_user_id is not None and not config.default_user_id.strip():
        yield "default_user_id: must not be blank (remove it to require safety_identifier)"


# Every name is a path segment of its admin URL, so it needs no escaping to be reachable.
NAME_PATTERN = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:@-]{0,63}")
_NAME_RULE = (
    "names are 1 to 64 letters, digits, '.', '_', ':', '@' or '-', starting with a letter "
    "or a digit"
)


def _check_names(config: Config) -> Iterator[str]:
    named: tuple[
        tuple[str, Sequence[AgentConfig | JudgeConfig | ExperimentConfig | EmbedderConfig]], ...
    ] = (
        ("agents", config.agents),
        ("judges", config.judges),
        ("experiments", config.experiments),
        ("embedders", config.embedders),
    )
    for section, items in named:
        seen: set[str] = set()
        for index, item in enumerate(items):
            if not item.name.strip():
                yield f"{section}[{index}].name: must not be blank"
            elif not NAME_PATTERN.fullmatch(item.name):
                yield f"{section}[{index}].name: {item.name!r} is not a valid name ({_NAME_RULE})"
            elif item.name in seen:
                yield f"{section}[{index}].name: duplicate name '{item.name}'"
            seen.add(item.name)
    for name in config.mcp:
        if not NAME_PATTERN.fullmatch(name):
            yield f"mcp.{name}: {name!r} is not a valid name ({_NAME_RULE})"
    agent_names = {agent.name for agent in config.agents}
    for index, experiment in enumerate(config.experiments):
        if experiment.name in agent_names:
            yield (
                f"experiments[{index}].name: '{experiment.name}' is already an agent name "
                "(agents and experiments share one namespace)"
            )
    models = agent_names | {experiment.name for experiment in config.experiments}
    for index, embedder in enumerate(config.embedders):
        if embedder.name in models:
            yield (
                f"embedders[{index}].name: '{embedder.name}' is already an agent or experiment "
                "name (all three are models of /v1/models)"
            )


def _check_providers(config: Config) -> Iterator[str]:
    kinds = ", ".join(KIND_NAMES)
    for name, provider in config.providers.items():
        if not NAME_PATTERN.fullmatch(name):
            yield f"providers.{name}: {name!r} is not a valid name ({_NAME_RULE})"
        elif provider.kind is None and name not in KIND_NAMES:
            yield (
                f"providers.{name}: '{name}' is not a provider kind, so the provider needs "
                f"kind: (one of {kinds})"
            )
        timeout = provider.timeout
        if isinstance(timeout, float) and not (math.isfinite(timeout) and timeout > 0):
            yield f"providers.{name}.timeout: must be a finite number greater than 0, got {timeout}"
    served: tuple[tuple[str, Sequence[AgentConfig | JudgeConfig]], ...] = (
        ("agents", config.agents),
        ("judges", config.judges),
    )
    for section, items in served:
        for index, item in enumerate(items):
            upstreams = [
                ("provider", item.provider),
                *(
                    (f"deployments[{position}].provider", deployment.provider)
                    for position, deployment in enumerate(item.deployments)
                ),
                *(
                    (f"fallbacks[{position}].provider", fallback.provider)
                    for position, fallback in enumerate(item.fallbacks)
                ),
            ]
            for field, provider_name in upstreams:
                if provider_name not in config.providers:
                    yield (
                        f"{section}[{index}].{field}: provider '{provider_name}' is not configured"
                    )


def _check_billing(config: Config) -> Iterator[str]:
    for name, provider in config.providers.items():
        billing = provider.billing
        if billing is None:
            continue
        path = f"providers.{name}.billing"
        kind = config.provider_kind(name)
        if kind not in BILLING_KINDS:
            yield (
                f"{path}: provider '{name}' is of kind {kind}, whose bills the gateway cannot "
                f"read (the kinds it can: {', '.join(BILLING_KINDS)})"
            )
        if not billing.admin_key.strip():
            yield f"{path}.admin_key: must not be blank"
        if billing.project is not None and not billing.project.strip():
            yield f"{path}.project: must not be blank (remove it to compare the whole organization)"


def _check_native_batches(config: Config) -> Iterator[str]:
    for name, provider in config.providers.items():
        kind = config.provider_kind(name)
        if provider.batch == "native" and kind not in NATIVE_BATCH_KINDS:
            yield (
                f"providers.{name}.batch: provider '{name}' is of kind {kind}, which has no "
                f"batch API the gateway speaks (native batches: {', '.join(NATIVE_BATCH_KINDS)})"
            )


def _check_agents(config: Config) -> Iterator[str]:
    judges = {judge.name for judge in config.judges}
    callables = {agent.name for agent in config.agents} | {exp.name for exp in config.experiments}
    for index, agent in enumerate(config.agents):
        path = f"agents[{index}]"
        for position, judge in enumerate(agent.judges):
            if judge not in judges:
                yield f"{path}.judges[{position}]: judge '{judge}' is not defined"
        for position, subagent in enumerate(agent.subagents):
            if subagent == agent.name:
                yield f"{path}.subagents[{position}]: an agent cannot be its own subagent"
            elif subagent not in callables:
                yield f"{path}.subagents[{position}]: agent or experiment '{subagent}' is not defined"
        for position, ref in enumerate(agent.mcp_tools):
            if ref.server not in config.mcp:
                yield f"{path}.mcp_tools[{position}].server: MCP server '{ref.server}' is not defined"
            if ref.only is not None and not ref.only:
                yield f"{path}.mcp_tools[{position}].only: must list at least one tool (or be omitted)"


def _check_subagent_cycles(config: Config) -> Iterator[str]:
    """Report each agent that can reach itself through subagents (experiments included)."""
    edges: dict[str, list[str]] = {agent.name: list(agent.subagents) for agent in config.agents}
    for experiment in config.experiments:
        edges[experiment.name] = [variant.agent for variant in experiment.variants]

    def reaches(start: str, target: str) -> bool:
        stack, seen = list(edges.get(start, [])), set()
        while stack:
            node = stack.pop()
            if node == target:
                return True
            if node not in seen:
                seen.add(node)
                stack.extend(edges.get(node, []))
        return False

    for index, agent in enumerate(config.agents):
        for position, subagent in enumerate(agent.subagents):
            if subagent != agent.name and reaches(subagent, agent.name):
                yield (
                    f"agents[{index}].subagents[{position}]: '{subagent}' leads back to "
                    f"'{agent.name}' (subagents must not form a cycle)"
                )


def _check_judges(config: Config) -> Iterator[str]:
    for index, judge in enumerate(config.judges):
        if not judge.rubrics:
            yield f"judges[{index}].rubrics: must define at least one criterion"
        for criterion, text in judge.rubrics.items():
            if not str(text).strip():
                yield f"judges[{index}].rubrics.{criterion}: must describe what to assess"
        if not 0.0 <= judge.sampling_rate <= 1.0:
            yield f"judges[{index}].sampling_rate: must be between 0 and 1, got {judge.sampling_rate}"


_STRATEGY_FIELDS = {
    "shadow": ("primary", "sampling_rate"),
    "bandit": (
        "metric",
        "epsilon",
        "min_samples",
        "bandit_window_seconds",
        "objective",
        "max_cost_usd",
    ),
}


def _check_experiments(config: Config) -> Iterator[str]:
    agents = {agent.name: agent for agent in config.agents}
    experiments = {experiment.name for experiment in config.experiments}
    judges = {judge.name: judge for judge in config.judges}
    for index, experiment in enumerate(config.experiments):
        path = f"experiments[{index}]"
        yield from _check_variants(path, experiment, agents, experiments)
        yield from _check_strategy_fields(path, experiment)
        if experiment.strategy == "shadow":
            variant_agents = [variant.agent for variant in experiment.variants]
            if experiment.primary is None:
                yield f"{path}.primary: required with strategy 'shadow'"
            elif experiment.primary not in variant_agents:
                yield f"{path}.primary: '{experiment.primary}' is not one of the variants"
            rate = experiment.sampling_rate
            if rate is not None and not 0.0 <= rate <= 1.0:
                yield f"{path}.sampling_rate: must be between 0 and 1, got {rate}"
        if experiment.strategy == "bandit":
            yield from _check_bandit(path, experiment, agents, judges)


def _check_variants(
    path: str,
    experiment: ExperimentConfig,
    agents: dict[str, AgentConfig],
    experiments: set[str],
) -> Iterator[str]:
    if not experiment.variants:
        yield f"{path}.variants: must list at least one variant"
    seen: set[str] = set()
    for position, variant in enumerate(experiment.variants):
        where = f"{path}.variants[{position}]"
        if variant.agent in experiments:
            yield f"{where}.agent: '{variant.agent}' is an experiment (variants must be agents)"
        elif variant.agent not in agents:
            yield f"{where}.agent: agent '{variant.agent}' is not defined"
        if variant.agent in seen:
            yield f"{where}.agent: '{variant.agent}' is listed twice"
        seen.add(variant.agent)
        if not math.isfinite(variant.weight) or variant.weight <= 0:
            yield f"{where}.weight: must be a finite number greater than 0, got {variant.weight}"


def _check_strategy_fields(path: str, experiment: ExperimentConfig) -> Iterator[str]:
    for strategy, fields in _STRATEGY_FIELDS.items():
        if experiment.strategy == strategy:
            continue
        for field in fields:
            if getattr(experiment, field) is not None:
                yield f"{path}.{field}: only allowed with strategy '{strategy}'"


def _check_bandit(
    path: str,
    experiment: ExperimentConfig,
    agents: dict[str, AgentConfig],
    judges: dict[str, JudgeConfig],
) -> Iterator[str]:
    if experiment.epsilon is not None and not 0.0 <= experiment.epsilon <= 1.0:
        yield f"{path}.epsilon: must be between 0 and 1, got {experiment.epsilon}"
    if experiment.min_samples is not None and experiment.min_samples < 0:
        yield f"{path}.min_samples: must not be negative"
    if experiment.bandit_window_seconds is not None and experiment.bandit_window_seconds <= 0:
        yield f"{path}.bandit_window_seconds: must be greater than 0"
    objective = experiment.objective
    if objective is not None and experiment.metric not in (None, objective.metric):
        yield (
            f"{path}.metric: '{experiment.metric}' differs from objective.metric "
            f"'{objective.metric}' (objective.metric replaces metric)"
        )
        return
    metric = experiment.bandit_metric
    where = f"{path}.objective.metric" if objective is not None else f"{path}.metric"
    if metric is None:
        yield f"{path}.metric: required with strategy 'bandit' (as judge.criterion)"
        return
    judge_name, dot, criterion = metric.partition(".")
    judge = judges.get(judge_name)
    if not dot or judge is None or criterion not in judge.rubrics:
        yield f"{where}: '{metric}' is not a judge.criterion of a defined judge"
        return
    for variant in experiment.variants:
        agent = agents.get(variant.agent)
        if agent is not None and judge_name not in agent.judges:
            yield f"{where}: variant agent '{variant.agent}' does not use judge '{judge_name}'"


def _check_mcp(config: Config) -> Iterator[str]:
    for name, server in config.mcp.items():
        if name == _RESERVED_MCP_NAME:
            yield (
                f"mcp.{name}: the name {name!r} is reserved (the admin lists the users' MCP "
                f"connections at /admin/mcp/{name})"
            )
        if server.transport == "stdio" and not (server.command or "").strip():
            yield f"mcp.{name}.command: required with transport 'stdio'"
        if server.transport != "stdio" and not (server.url or "").strip():
            yield f"mcp.{name}.url: required with transport '{server.transport}'"
        if server.oauth is not None:
            yield from _check_oauth(f"mcp.{name}.oauth", server.transport, server.oauth)
    yield from _check_public_base_url(config)


# /admin/mcp/{name} is a server's page; /admin/mcp/connections is the connections' list.
_RESERVED_MCP_NAME = "connections"


def _check_oauth(path: str, transport: str, oauth: McpOAuthConfig) -> Iterator[str]:
    if transport == "stdio":
        yield (
            f"{path}: only with transport 'http' (users sign in to remote servers; a stdio "
            "server takes its credentials in env)"
        )
    for index, scope in enumerate(oauth.scopes):
        if not scope.strip() or any(character.isspace() for character in scope):
            yield f"{path}.scopes[{index}]: {scope!r} is not a scope (one word, no spaces)"
    client_id = oauth.client_id
    if client_id is not None and not client_id.strip():
        yield f"{path}.client_id: must not be blank (remove it to register the gateway dynamically)"
    if oauth.mode == "static":
        for field in ("authorization_url", "token_url", "client_id"):
            if not (getattr(oauth, field) or "").strip():
                yield f"{path}.{field}: required with mode 'static'"


def _check_public_base_url(config: Config) -> Iterator[str]:
    """The connect links of MCP servers that sign users in are opened by the users'
    browsers: they need the gateway's address as those browsers reach it."""
    signing_in = [
        name
        for name, server in config.mcp.items()
        if server.oauth is not None and server.oauth.mode != "when_asked"  # warned instead
    ]
    url = config.public_base_url
    if url is None or not url.strip():
        if signing_in:
            yield (
                f"public_base_url: required when an MCP server signs users in "
                f"(mcp.{signing_in[0]}.oauth): the gateway's URL as the users' browsers reach "
                "it, for the links that connect their accounts"
            )
        return
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.netloc or parts.query or parts.fragment:
        yield (
            "public_base_url: must be an absolute http:// or https:// URL without query or "
            f"fragment, got {url!r}"
        )


_REQUIRED_AUTH_FIELDS = {"basic": ("username", "password"), "oidc": ("issuer_url", "client_id")}


def _check_pricing(config: Config) -> Iterator[str]:
    for key in config.pricing:
        provider, slash, model = key.partition("/")
        if not (slash and model):
            yield f"pricing.{key}: the key must be <provider name>/<model>"
        elif provider not in config.providers:
            yield f"pricing.{key}: provider '{provider}' is not configured"


def _check_auth(config: Config) -> Iterator[str]:
    if config.auth is None:
        return
    consumer = config.auth.mcp_consumer_secret
    if consumer is not None and not consumer.strip():
        yield (
            "auth.mcp_consumer_secret: must not be blank (remove it to turn "
            "POST /mcp/{server}/connect-link off)"
        )
    for scope_name in ("proxy", "admin"):
        scope: AuthScope | None = getattr(config.auth, scope_name)
        if scope is None:
            continue
        path = f"auth.{scope_name}"
        methods = [method for method in ("basic", "oidc") if getattr(scope, method) is not None]
        if scope.takes_api_keys and scope_name == "admin":
            yield f"{path}.api_keys: API keys are for auth.proxy only"
        elif scope.takes_api_keys and len(methods) > 1:
            yield f"{path}: must configure at most one of basic or oidc beside api_keys"
        elif not scope.takes_api_keys and len(methods) != 1:
            yield f"{path}: must configure exactly one of basic or oidc"
        for method in methods:
            settings = getattr(scope, method)
            for field in _REQUIRED_AUTH_FIELDS[method]:
                if not getattr(settings, field).strip():
                    yield f"{path}.{method}.{field}: must not be blank"


def _check_memory(config: Config) -> Iterator[str]:
    embedders = {embedder.name for embedder in config.embedders}
    agents = {agent.name for agent in config.agents}
    for index, agent in enumerate(config.agents):
        memory = agent.memory
        if memory is None:
            continue
        path = f"agents[{index}].memory"
        if memory.embedder not in embedders:
            yield f"{path}.embedder: embedder '{memory.embedder}' is not defined"
        extractor = memory.extractor
        if isinstance(extractor, str) and extractor not in agents:
            yield f"{path}.extractor: agent '{extractor}' is not defined"
        elif isinstance(extractor, Upstream) and extractor.provider not in config.providers:
            yield f"{path}.extractor.provider: provider '{extractor.provider}' is not configured"


def _check_embedders(config: Config) -> Iterator[str]:
    for index, embedder in enumerate(config.embedders):
        path = f"embedders[{index}].provider"
        if embedder.provider not in config.providers:
            yield f"{path}: provider '{embedder.provider}' is not configured"
        elif (kind := config.provider_kind(embedder.provider)) not in EMBEDDING_KINDS:
            yield (
                f"{path}: provider '{embedder.provider}' is of kind {kind}, which serves no "
                f"embeddings (the kinds that do: {', '.join(EMBEDDING_KINDS)})"
            )


def _check_caches(config: Config) -> Iterator[str]:
    embedders = {embedder.name for embedder in config.embedders}
    for index, agent in enumerate(config.agents):
        cache = agent.cache
        if cache is None:
            continue
        path = f"agents[{index}].cache"
        if cache.mode == "semantic" and cache.embedder is None:
            yield f"{path}.embedder: required with mode 'semantic'"
        elif cache.embedder is not None and cache.embedder not in embedders:
            yield f"{path}.embedder: embedder '{cache.embedder}' is not defined"
        if cache.scope == "global" and (agent.history or agent.memory is not None):
            yield (
                f"{path}.scope: 'global' needs history: false and no memory (an answer would "
                "carry one user's conversation to another)"
            )
        if cache.min_score is not None and not agent.judges:
            yield f"{path}.min_score: needs a judge on the agent (its scores decide)"


def _check_aliases(config: Config) -> Iterator[str]:
    configured = {
        *(agent.name for agent in config.agents),
        *(experiment.name for experiment in config.experiments),
        *(embedder.name for embedder in config.embedders),
    }
    for alias, target in config.aliases.items():
        path = f"aliases[{alias!r}]"
        if "*" in alias[:-1]:
            yield f"{path}: '*' may only end an alias (a prefix)"
        elif alias in configured:
            yield f"{path}: '{alias}' is an agent, experiment or embedder already"
        if target not in configured:
            yield f"{path}: '{target}' is not an agent, experiment or embedder"


def _check_skills(config: Config) -> Iterator[str]:
    """What discovery found wrong under skills.dir (every SKILL.md, listed by an agent
    or not), and the skills agents list twice (an unknown one is warned:
    ``skill_warnings``)."""
    catalog = config.skill_catalog
    yield from catalog.problems
    for skill in catalog.skills.values():
        if not NAME_PATTERN.fullmatch(skill.name):
            yield f"skills: {skill.source}: {skill.name!r} is not a valid name ({_NAME_RULE})"
    for index, agent in enumerate(config.agents):
        seen: set[str] = set()
        for position, name in enumerate(agent.skills):
            if name in seen:
                yield f"agents[{index}].skills[{position}]: '{name}' is listed twice"
            seen.add(name)


def skill_warnings(config: Config) -> list[ConfigWarning]:
    """The skills agents list that no SKILL.md names: the agents go without them (as in
    Coulisse)."""
    where = "skills.dir" if config.skills is not None else DEFAULT_SKILLS_DIR
    return [
        ConfigWarning(
            f"agents[{index}].skills[{position}]",
            f"skill '{name}' is not defined (no SKILL.md under {where} names it): the agent "
            "goes without it",
        )
        for index, agent in enumerate(config.agents)
        for position, name in enumerate(agent.skills)
        if config.skill(name) is None
    ]


HOOKS = "/hooks/"  # the webhooks' paths: /hooks/<name>

# The engine of the triggers' messages (docs/automation.md): Django's template language,
# no HTML escaping (a message is text for a model, not a page).
MESSAGE_TEMPLATES = Engine(autoescape=False)


def cron_problem(expression: str) -> str | None:
    """Why ``expression`` is not a cron schedule of 5 fields, or None when it is."""
    if len(expression.split()) != 5:
        return f"{expression!r} is not a cron schedule of 5 fields (minute hour day month weekday)"
    from croniter import croniter  # only for a config with schedules (a MB of memory)

    if not croniter.is_valid(expression):
        return f"{expression!r} is not a valid cron schedule"
    return None


def _check_unique_names(section: str, names: Sequence[str]) -> Iterator[str]:
    seen: set[str] = set()
    for index, name in enumerate(names):
        if not NAME_PATTERN.fullmatch(name):
            yield f"{section}[{index}].name: {name!r} is not a valid name ({_NAME_RULE})"
        elif name in seen:
            yield f"{section}[{index}].name: duplicate name '{name}'"
        seen.add(name)


def _check_triggers(config: Config) -> Iterator[str]:
    targets = {agent.name for agent in config.agents} | {exp.name for exp in config.experiments}
    yield from _check_unique_names("triggers", [trigger.name for trigger in config.triggers])
    hooks: set[str] = set()
    for index, trigger in enumerate(config.triggers):
        path = f"triggers[{index}]"
        if trigger.agent not in targets:
            yield f"{path}.agent: agent or experiment '{trigger.agent}' is not defined"
        if not trigger.user.strip():
            yield f"{path}.user: must not be blank"
        try:
            MESSAGE_TEMPLATES.from_string(trigger.message)
        except TemplateSyntaxError as error:
            yield f"{path}.message: not a valid template: {error}"
        if len(trigger.kinds) != 1:
            yield f"{path}: must have exactly one of schedule, webhook or on_start: true"
        if trigger.schedule is not None and (problem := cron_problem(trigger.schedule)):
            yield f"{path}.schedule: {problem}"
        if trigger.path is not None:
            hook = trigger.path.removeprefix(HOOKS)
            if not trigger.path.startswith(HOOKS) or not NAME_PATTERN.fullmatch(hook):
                yield f"{path}.path: must be {HOOKS}<name> ({_NAME_RULE}), got {trigger.path!r}"
            elif hook in hooks:
                yield f"{path}.path: '{trigger.path}' is the path of another trigger"
            hooks.add(hook)
        elif trigger.webhook is not None and not trigger.webhook.secret.strip():
            yield f"{path}.webhook.secret: must be set (requests are signed with it)"
        deliver = trigger.deliver
        if deliver is not None:
            if not deliver.url.startswith(("http://", "https://")):
                yield f"{path}.deliver.url: must be an http:// or https:// URL"
            if not deliver.secret.strip():
                yield f"{path}.deliver.secret: must be set (deliveries are signed with it)"


def _check_smoke_tests(config: Config) -> Iterator[str]:
    agents = {agent.name for agent in config.agents}
    experiments = {experiment.name for experiment in config.experiments}
    judges = {judge.name for judge in config.judges}
    yield from _check_unique_names("smoke_tests", [test.name for test in config.smoke_tests])
    for index, test in enumerate(config.smoke_tests):
        path = f"smoke_tests[{index}]"
        if test.agent not in agents | experiments:
            yield f"{path}.agent: agent or experiment '{test.agent}' is not defined"
        persona = test.persona
        if isinstance(persona, str) and persona not in agents:
            yield f"{path}.persona: agent '{persona}' is not defined"
        elif not isinstance(persona, str) and persona.provider not in config.providers:
            yield f"{path}.persona.provider: provider '{persona.provider}' is not configured"
        if test.repetitions < 1:
            yield f"{path}.repetitions: must be at least 1, got {test.repetitions}"
        if test.stop_marker is not None and not test.stop_marker.strip():
            yield f"{path}.stop_marker: must not be blank"
        for position, judge in enumerate(test.judges):
            if judge not in judges:
                yield f"{path}.judges[{position}]: judge '{judge}' is not defined"
        if test.turns < 1:
            yield f"{path}.turns: must be at least 1, got {test.turns}"
        if test.min_score is not None and not 0 <= test.min_score <= 10:
            yield f"{path}.min_score: must be between 0 and 10, got {test.min_score}"
        if test.min_score is not None and not test.judges:
            yield f"{path}.min_score: needs at least one judge (their scores decide)"
        if test.opening is not None and not test.opening.strip():
            yield f"{path}.opening: must not be blank (remove it to let the persona open)"


def _check_moderation(path: str, provider: str | None, config: Config) -> Iterator[str]:
    if provider is None:
        yield f"{path}.provider: a moderation guardrail needs an OpenAI-format provider"
    elif provider not in config.providers:
        yield f"{path}.provider: provider '{provider}' is not defined"
    elif PROVIDER_KINDS[config.provider_kind(provider)].wire != "openai":
        yield (
            f"{path}.provider: provider '{provider}' does not speak OpenAI's format "
            "(its /moderations is what is called)"
        )


# The entities of the pii kind: Presidio's pattern recognizers that need no language model.
PII_ENTITIES = (
    "EMAIL_ADDRESS",
    "PHONE_NUMBER",
    "CREDIT_CARD",
    "IBAN_CODE",
    "US_SSN",
    "IP_ADDRESS",
)
_REDACTING_KINDS = ("pii", "secrets")
_ENTITY_NAME = re.compile(r"[A-Z][A-Z0-9_]{0,39}")


def _check_guardrails(config: Config) -> Iterator[str]:
    yield from _check_unique_names("guardrails", [guard.name for guard in config.guardrails])
    for index, guard in enumerate(config.guardrails):
        path = f"guardrails[{index}]"
        if guard.action == "redact" and guard.kind not in _REDACTING_KINDS:
            yield f"{path}.action: only pii and secrets guardrails redact ({guard.kind} cannot)"
        if guard.kind != "pii" and guard.entities is not None:
            yield f"{path}.entities: only a pii guardrail chooses entities"
        for entity in guard.entities or ():
            if entity not in PII_ENTITIES:
                yield (
                    f"{path}.entities: unknown entity '{entity}' (known: {', '.join(PII_ENTITIES)})"
                )
        if guard.patterns and guard.kind not in ("pii", "denylist"):
            yield f"{path}.patterns: only pii and denylist guardrails take patterns"
        for number, pattern in enumerate(guard.patterns):
            if not _ENTITY_NAME.fullmatch(pattern.name):
                yield (
                    f"{path}.patterns[{number}].name: {pattern.name!r} must be upper-case "
                    "letters, digits and '_' (it names placeholders)"
                )
            import re2  # only for a config with patterns (a MB of memory)

            try:
                re2.compile(pattern.regex)
            except re2.error as error:
                reason = error.args[0] if error.args else ""
                if isinstance(reason, bytes):
                    reason = reason.decode(errors="replace")
                yield f"{path}.patterns[{number}].regex: not an RE2 pattern: {reason}"
        if guard.kind == "denylist" and not (guard.words or guard.patterns):
            yield f"{path}: a denylist needs words or patterns"
        if guard.kind == "judge" and guard.agent is None:
            yield f"{path}.agent: a judge needs the agent that classifies"
        elif guard.agent is not None and config.agent(guard.agent) is None:
            yield f"{path}.agent: agent '{guard.agent}' is not defined"
        if guard.kind == "moderation":
            yield from _check_moderation(path, guard.provider, config)
    defined = {guard.name for guard in config.guardrails}
    for index, agent in enumerate(config.agents):
        for name in agent.guardrails:
            if name not in defined:
                yield f"agents[{index}].guardrails: guardrail '{name}' is not defined"


def unknown_keys(config: Config) -> list[ConfigWarning]:
    """Keys the schema does not know inside the sections it does (an agent's
    ``histroy``): the config still loads (unknown keys are kept and ignored), but each is
    named with its path and the closest known key, so a typo is not silently a default:
    ``agents[0].histroy: not a key the gateway knows, ignored (did you mean `history`?)``.
    Unknown top-level sections are left alone: they are accepted on purpose (another
    service's sections in a shared file)."""
    found: list[ConfigWarning] = []
    for name in type(config).model_fields:
        _walk(getattr(config, name), name, found)
    return found


def _walk(value: Any, path: str, found: list[ConfigWarning]) -> None:
    if isinstance(value, BaseModel):
        known = list(type(value).model_fields)
        for key in value.model_extra or {}:
            closest = difflib.get_close_matches(str(key), known, n=1)
            hint = f" (did you mean `{closest[0]}`?)" if closest else ""
            found.append(
                ConfigWarning(f"{path}.{key}", f"not a key the gateway knows, ignored{hint}")
            )
        for name in known:
            _walk(getattr(value, name), f"{path}.{name}", found)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            _walk(item, f"{path}[{index}]", found)
    elif isinstance(value, dict):
        for key, item in value.items():
            _walk(item, f"{path}.{key}", found)
