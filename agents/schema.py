"""Typed schema of the whole config file (docs/configuration.md).

Field names are the ones users of the original service already write. Unknown keys
are allowed everywhere (``extra="allow"``): they are preserved on disk and ignored by
validation. Rules that involve more than one field live in ``agents.validation``.
"""

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, field_validator
from pydantic_core import PydanticCustomError

from agents.skills.catalog import Skill, SkillCatalog
from core.providerkinds import ProviderKindName


@dataclass(frozen=True)
class ConfigWarning:
    """A key of a config that loads which the gateway accepts without acting on it (it
    never refuses the config; check_config prints it, the reload logs it)."""

    path: str  # e.g. ``server.worker_threads``
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class Section(BaseModel):
    model_config = ConfigDict(extra="allow", frozen=True)


class Finite(Section):
    """A section whose numbers must be finite (``.inf`` and ``.nan`` are refused)."""

    model_config = ConfigDict(allow_inf_nan=False)


class RetryConfig(Finite):
    """Our extension: how a failed upstream call is tried again (docs/resilience.md)."""

    attempts: int = Field(default=2, ge=0, description="Retries after the first try.")
    backoff: float = Field(default=0.5, ge=0, description="Seconds of the first retry's wait.")
    max_backoff: float = Field(default=8, ge=0, description="The longest wait between tries.")
    max_retry_after: float = Field(
        default=30, ge=0, description="The longest upstream Retry-After the gateway waits for."
    )


class TimeoutConfig(Finite):
    """Our extension: seconds an upstream call may take, by phase."""

    connect: float = Field(default=5, gt=0)
    first_byte: float = Field(default=60, gt=0)
    idle: float = Field(default=60, gt=0, description="The longest gap between stream events.")
    total: float = Field(default=600, gt=0)


class CircuitConfig(Finite):
    """Our extension: when a failing deployment is skipped for a while (0 failures: never)."""

    failures: int = Field(default=5, ge=0)
    cooldown: float = Field(default=30, ge=0)


class BillingConfig(Section):
    """Our extension: the provider's billing API, read to compare what it billed with what
    the gateway computed (docs/reconciliation.md)."""

    admin_key: str = Field(description="An admin key of the organization (a secret).")
    project: str | None = Field(
        default=None,
        description="Only this project's (openai) or workspace's (anthropic) costs.",
    )


class ProviderConfig(Section):
    kind: ProviderKindName | None = Field(
        default=None, description="Our extension: the wire format; defaults to the name."
    )
    api_key: str = ""
    base_url: str | None = Field(
        default=None, description="Our extension: overrides the provider's public endpoint."
    )
    # A plain number (the form configs already use) is the total; checked in validation.
    timeout: float | TimeoutConfig = TimeoutConfig()
    retries: RetryConfig = RetryConfig()
    circuit: CircuitConfig = CircuitConfig()
    documents: bool | None = Field(
        default=None,
        description="Our extension: whether it takes PDFs (default: by kind); false: "
        "their text is sent instead.",
    )
    billing: BillingConfig | None = Field(
        default=None, description="Our extension: what it billed, for spend reconciliation."
    )
    batch: Literal["gateway", "native"] = Field(
        default="gateway",
        description="Our extension: native: batch lines go upstream as one provider batch "
        "(kinds openai, anthropic; docs/batches.md).",
    )

    @property
    def timeouts(self) -> TimeoutConfig:
        if isinstance(self.timeout, TimeoutConfig):
            return self.timeout
        return TimeoutConfig(total=self.timeout)


class PriceConfig(Finite):
    """Our extension: USD per million tokens of one ``<provider name>/<model>``."""

    input: float = Field(ge=0)
    output: float = Field(ge=0)
    cache_read: float | None = Field(default=None, ge=0, description="Defaults to input.")
    cache_write: float | None = Field(default=None, ge=0, description="Defaults to input.")


class McpToolsRef(Section):
    server: str
    only: list[str] | None = None


class DeploymentConfig(Finite):
    provider: str
    model: str
    weight: float = Field(default=1, gt=0)


class FallbackConfig(Section):
    provider: str
    model: str


class Served(Section):
    """An agent's or judge's upstream: its own provider and model, the deployments that
    share its load, the fallbacks tried when they all fail (docs/resilience.md)."""

    provider: str
    model: str
    weight: float = Field(default=1, gt=0, allow_inf_nan=False)
    deployments: list[DeploymentConfig] = []
    fallbacks: list[FallbackConfig] = []


class Upstream(Section):
    """A provider and a model, named inline (Coulisse's ``learn_from``, a persona)."""

    provider: str
    model: str


class MemoryConfig(Section):
    """An agent's long-term memory of each user (docs/memory.md)."""

    embedder: str = Field(description="The embedder of the memories' vectors.")
    recall: int = Field(default=5, ge=1, description="Memories recalled before a turn.")
    max_tokens: int = Field(default=800, ge=1, description="The most the recalled list may use.")
    extractor: str | Upstream | None = Field(
        default=None,
        description="The agent (or {provider, model}) that picks the facts to keep (none: "
        "keep none).",
    )
    dedup: float = Field(
        default=0.9, gt=0, le=1, description="Similarity at or above which a fact is known."
    )
    max_facts: int | None = Field(
        default=None, ge=1, description="The most facts kept of one exchange (none: all)."
    )


class AgentCacheConfig(Finite):
    """An agent's response cache (docs/caching.md): its model calls answered from earlier
    identical (or, semantic, similar) ones, without calling the upstream."""

    mode: Literal["exact", "semantic"]
    ttl: int = Field(default=3600, ge=1, description="Seconds an answer is kept.")
    scope: Literal["user", "key", "global"] = Field(
        default="user", description="Whose answers a request may get: its user's, key's, or any."
    )
    similarity: float = Field(
        default=0.95, gt=0, le=1, description="Semantic: the least cosine similarity of a hit."
    )
    embedder: str | None = Field(
        default=None, description="Semantic: the embedder of the last user message."
    )
    min_score: float | None = Field(
        default=None, ge=0, le=10, description="A judge score below it forgets the answer."
    )
    gate: Literal["strict", "off"] = Field(
        default="strict",
        description="Semantic: strict serves a similar question's answer only when both agree "
        "on negation, numbers, quoted strings, names and the order of shared words.",
    )


class AgentConfig(Served):
    name: str
    preamble: str = ""
    purpose: str | None = None
    judges: list[str] = []
    subagents: list[str] = []
    mcp_tools: list[McpToolsRef] = []
    memory: MemoryConfig | None = None
    history: bool = Field(
        default=True, description="Our extension: false = nothing replayed or stored."
    )
    cache: AgentCacheConfig | None = None
    skills: list[str] = Field(default=[], description="Skills (under skills.dir) it may load.")
    guardrails: list[str] = Field(
        default=[], description="Guardrails (top-level guardrails:) its calls go through."
    )
    tasks: bool = Field(
        default=False,
        description="Our extension: the tools dispatch_task and task_status (docs/automation.md).",
    )
    max_turns: int | None = Field(
        default=None, ge=0, description="The most tool rounds of one of its turns."
    )


class JudgeConfig(Served):
    name: str
    sampling_rate: float = 1.0
    rubrics: dict[str, str]


class VariantConfig(Section):
    agent: str
    weight: float = 1.0


class BanditObjective(Finite):
    """Our extension: what a bandit maximizes (docs/evaluations.md): a request's judge score
    less ``cost_weight`` score points per USD it cost."""

    metric: str = Field(description="judge.criterion")
    cost_weight: float = Field(default=0, ge=0, description="Score points a dollar is worth.")


class ExperimentConfig(Section):
    name: str
    strategy: Literal["split", "shadow", "bandit"]
    sticky_by_user: bool = True
    purpose: str | None = None
    variants: list[VariantConfig]
    primary: str | None = None
    sampling_rate: float | None = None
    metric: str | None = None
    epsilon: float | None = None
    min_samples: int | None = None
    bandit_window_seconds: int | None = None
    objective: BanditObjective | None = None
    max_cost_usd: float | None = Field(default=None, gt=0, allow_inf_nan=False)

    @property
    def bandit_metric(self) -> str | None:
        """The judge.criterion a bandit decides on (``objective.metric``, else ``metric``)."""
        return self.objective.metric if self.objective is not None else self.metric


class McpOAuthConfig(Section):
    """An ``http`` or ``sse`` MCP server called with each user's own access token, which
    the user grants the gateway in a browser (OAuth 2.1 with PKCE)."""

    scopes: list[str] = Field(
        default=[], description="The scopes asked for (none: those the server advertises)."
    )
    client_id: str | None = Field(
        default=None,
        description="A client registered by hand (none: dynamic client registration).",
    )
    mode: Literal["discover", "static", "when_asked"] = Field(
        default="discover",
        description="static: a confidential client with the endpoints below, nothing "
        "discovered; when_asked: users without a token are served without one until the "
        "server answers 401.",
    )
    authorization_url: str | None = None
    token_url: str | None = None
    client_secret: str | None = None
    redirect_uri: str | None = None


class McpServerConfig(Section):
    transport: Literal["stdio", "http", "sse"] = Field(
        description="Inferred when absent: stdio with command, http with url (sse when its "
        "path ends in /sse)."
    )
    command: str | None = None
    args: list[str] = []
    env: dict[str, str] = {}
    url: str | None = None
    oauth: McpOAuthConfig | None = Field(
        default=None,
        description="Our extension: 'discover', or {scopes, client_id}: each user signs in.",
    )

    @field_validator(
        "oauth", mode="before", json_schema_input_type=Literal["discover"] | McpOAuthConfig | None
    )
    @classmethod
    def _oauth_form(cls, value: Any) -> Any:
        """``discover`` is the mapping with nothing in it: the scopes the server
        advertises, and a client registered dynamically."""
        if value == "discover":
            return {}
        if value is None or isinstance(value, dict | McpOAuthConfig):
            return value
        raise PydanticCustomError(
            "oauth_form",
            "must be 'discover' or a mapping {scopes: [...], client_id: ...}, got {value}",
            {"value": repr(value)},
        )


class BasicAuth(Section):
    username: str = "admin"  # the original format's default
    password: str


class OidcAuth(Section):
    issuer_url: str
    client_id: str
    client_secret: str = ""
    redirect_url: str = ""
    scopes: list[str] = []


class AuthScope(Section):
    basic: BasicAuth | None = None
    oidc: OidcAuth | None = None
    bind_user: bool = False  # our extension: the authenticated principal is the user id
    # Our extension: minted sk-gw- keys are accepted (docs/cost-and-keys.md). The original
    # format's ``tokens: {}`` means the same.
    api_keys: bool = False
    tokens: dict[str, object] | None = None

    @property
    def takes_api_keys(self) -> bool:
        return self.api_keys or self.tokens is not None


class AuthConfig(Section):
    proxy: AuthScope | None = None
    admin: AuthScope | None = None
    mcp_consumer_secret: str | None = Field(
        default=None,
        description="Coulisse's: the bearer secret of POST /mcp/{server}/connect-link.",
    )


class HistoryConfig(Section):
    max_messages: int = Field(default=50, ge=0)
    max_tokens: int = Field(default=8000, ge=0)


class StructuredOutputConfig(Section):
    max_repairs: int = Field(default=2, ge=0)


class LimitsConfig(Finite):
    """Our extension: bounds on what one request may cost the gateway."""

    max_model_calls_per_turn: int = Field(
        default=48, ge=1, description="Upstream model calls of one turn, subagents included."
    )
    max_turn_seconds: float = Field(
        default=300, gt=0, description="How long one turn may run, subagents included."
    )
    max_body_mb: float = Field(
        default=10, gt=0, description="The largest /v1 request body, in MiB (413 above)."
    )
    max_upstream_body_mb: float = Field(
        default=32, gt=0, description="The largest body sent upstream, in MiB (413 above)."
    )
    webhook_max_body_kb: float = Field(
        default=1024, gt=0, description="The largest webhook body, in KiB (413 above)."
    )
    max_tools: int = Field(
        default=512, ge=1, description="Tool definitions one request may carry (400 above)."
    )
    tasks_concurrency: int = Field(
        default=4, ge=1, description="Background tasks one process runs at once."
    )
    max_tasks_per_turn: int = Field(
        default=8, ge=0, description="Tasks one turn may dispatch, subagents included."
    )
    max_task_depth: int = Field(
        default=2,
        ge=0,
        description="Levels of tasks: 1, the tasks of a turn dispatch none; 2, theirs dispatch none.",
    )
    max_task_attempts: int = Field(
        default=3, ge=1, description="Times a task is taken up before it fails as interrupted."
    )


class BudgetLimits(Finite):
    """Our extension: caps over rolling windows (an hour, a day, 30 days); None: no cap."""

    tokens_per_hour: int | None = Field(default=None, ge=0)
    tokens_per_day: int | None = Field(default=None, ge=0)
    tokens_per_month: int | None = Field(default=None, ge=0)
    usd_per_hour: float | None = Field(default=None, ge=0)
    usd_per_day: float | None = Field(default=None, ge=0)
    usd_per_month: float | None = Field(default=None, ge=0)


class BudgetsConfig(Section):
    """Our extension: the operator's budgets per user, on top of the client's ``metadata``
    caps; a user's entry overrides ``default`` key by key."""

    default: BudgetLimits = BudgetLimits()
    users: dict[str, BudgetLimits] = {}


class TelemetryConfig(Finite):
    """Our extension: OpenTelemetry traces (docs/telemetry.md); the standard ``OTEL_*``
    environment variables work too."""

    otlp_endpoint: str | None = Field(
        default=None, description="The collector's base URL: spans go to <it>/v1/traces."
    )
    headers: dict[str, str] = Field(
        default={}, description="Headers sent with every export (a collector's credentials)."
    )
    service_name: str | None = Field(
        default=None, description="The spans' service.name (else OTEL_SERVICE_NAME)."
    )
    sample_rate: float = Field(default=1.0, ge=0, le=1)
    capture_content: bool = False
    store: bool = Field(
        default=True, description="Keep each request's spans for the admin's Requests pages."
    )
    retention_days: float = Field(default=7, gt=0)


class FilesConfig(Finite):
    """Our extension: the files users upload (``/v1/files``, docs/files.md)."""

    dir: str = Field(default="./files", description="Where the bytes are kept.")
    max_file_mb: float = Field(default=25, gt=0, description="The largest file, in MiB.")
    max_user_mb: float = Field(default=500, gt=0, description="One user's files, in MiB.")
    max_total_mb: float | None = Field(
        default=None, gt=0, description="All users' files together, in MiB (none: no bound)."
    )
    max_pdf_pages: int = Field(
        default=500, ge=1, description="Pages of a PDF whose text is read; the rest are not."
    )
    max_text_mb: float = Field(
        default=2, gt=0, description="The text read of a file, in MiB of characters."
    )


class BatchesConfig(Finite):
    """Our extension: how batches run (``/v1/batches``, docs/batches.md)."""

    concurrency: int = Field(
        default=4, ge=1, description="Lines of batches sent at once by one process."
    )
    yield_above: int = Field(
        default=8,
        ge=1,
        description="Batch lines wait while this many live requests are in flight on the process.",
    )
    max_requests: int = Field(default=50_000, ge=1, description="The most lines a batch may have.")
    poll_seconds: float = Field(
        default=60,
        gt=0,
        allow_inf_nan=False,
        description="Seconds between polls of a native batch.",
    )


class SkillsConfig(Section):
    """Our extension: the folder of skills agents may load (docs/skills.md)."""

    dir: str = Field(description="One sub-folder per skill, each with a SKILL.md.")


class McpServerSettings(Section):
    """Our extension: the gateway as an MCP server at ``/mcp`` (docs/mcp.md)."""

    expose_tools: bool = Field(
        default=False, description="List the agents' MCP tools too, as <server>__<tool>."
    )


class CacheConfig(Section):
    """Our extension: what every agent's response cache shares (docs/caching.md)."""

    max_entries: int = Field(
        default=100_000, ge=1, description="Answers kept; the least recently used go first."
    )


class EvaluationsConfig(Section):
    """Our extension: replays of recorded traffic through other agents (docs/evaluations.md)."""

    concurrency: int = Field(
        default=4,
        ge=1,
        description="Model conversations one evaluation runs at once (candidates and judges).",
    )


class ReconciliationConfig(Finite):
    """Our extension: what the providers billed next to what the gateway computed
    (docs/reconciliation.md)."""

    days: int = Field(default=7, ge=1, le=90, description="Days compared, today (UTC) included.")
    alert_pct: float = Field(
        default=5, ge=0, description="A day's drift above this percentage is flagged."
    )


class EmbedderConfig(Section):
    """A model that turns text into vectors (``POST /v1/embeddings``, docs/embeddings.md),
    on an OpenAI-format provider, Gemini or Cohere."""

    name: str
    provider: str
    model: str
    dimensions: int | None = Field(
        default=None, ge=1, description="Asked of the provider where it takes it."
    )


class ServerConfig(Section):
    """Coulisse's ``server``: the address ``serve`` listens on by default."""

    bind: str | None = Field(default=None, description="serve's default --host.")
    port: int | None = Field(default=None, ge=1, le=65535, description="serve's default --port.")


class WebhookConfig(Section):
    secret: str = Field(default="", description="The HMAC-SHA256 key of X-Gateway-Signature.")


class DeliverConfig(Section):
    url: str = Field(description="Where each run's reply is POSTed.")
    secret: str = Field(default="", description="The HMAC-SHA256 key of the delivery's signature.")


TriggerKind = Literal["schedule", "webhook", "on_start"]


class TriggerConfig(Section):
    """Our extension: an agent's turn that no request starts (docs/automation.md)."""

    name: str
    agent: str
    user: str = Field(description="The user the turn runs as: history, budgets, cost.")
    message: str = Field(
        description="A Django template (autoescape off); a webhook's body is body."
    )
    schedule: str | None = Field(default=None, description="Cron, 5 fields, UTC.")
    webhook: WebhookConfig | None = None
    path: str | None = Field(default=None, description="A webhook's path (default /hooks/<name>).")
    on_start: bool = False
    deliver: DeliverConfig | None = None

    @property
    def kinds(self) -> list[TriggerKind]:
        """What fires it (exactly one, once validated)."""
        kinds: list[TriggerKind] = []
        if self.schedule is not None:
            kinds.append("schedule")
        if self.webhook is not None:
            kinds.append("webhook")
        if self.on_start:
            kinds.append("on_start")
        return kinds

    @property
    def kind(self) -> TriggerKind:
        return self.kinds[0]


class PersonaConfig(Upstream):
    """A smoke test's persona written inline (Coulisse's shape)."""

    preamble: str = ""


class SmokeTestConfig(Section):
    """An agent (or experiment) that another model talks to for a few exchanges, then the
    judges score the transcript."""

    name: str
    agent: str = Field(description="The agent or experiment tested.")
    persona: str | PersonaConfig = Field(description="The agent that plays the user, or inline.")
    opening: str | None = Field(
        default=None, description="The persona's first message (none: the persona opens)."
    )
    turns: int = Field(default=3, description="Exchanges (a persona message, an answer).")
    stop_marker: str | None = Field(
        default=None, description="A persona message containing it ends the conversation."
    )
    repetitions: int = Field(default=1, description="Conversations of one run.")

    @property
    def persona_name(self) -> str:
        """The persona as runs record it: its agent's name, or the inline one's model."""
        persona = self.persona
        return persona if isinstance(persona, str) else f"{persona.provider}/{persona.model}"

    judges: list[str] = []
    min_score: float | None = Field(
        default=None, description="The least mean score of each judge for a run to pass."
    )


class GuardrailPattern(Section):
    name: str = Field(description="The entity the match is named as (placeholders, events).")
    regex: str = Field(description="An RE2 pattern.")


GuardrailKind = Literal["pii", "secrets", "denylist", "judge", "moderation", "loop"]
GuardrailStage = Literal["input", "output", "tool_results"]


class GuardrailConfig(Finite):
    """Our extension: a check on what goes to and comes from the models
    (docs/guardrails.md)."""

    name: str
    kind: GuardrailKind
    on: list[GuardrailStage] = Field(default=["input"], min_length=1)
    action: Literal["block", "redact", "warn"] = "block"
    entities: list[str] | None = Field(
        default=None, description="pii: the entities looked for (default: all it knows)."
    )
    patterns: list[GuardrailPattern] = Field(
        default=[], description="pii, denylist: RE2 patterns looked for too."
    )
    words: list[str] = Field(default=[], description="denylist: whole words, any case.")
    agent: str | None = Field(default=None, description="judge: the agent that classifies.")
    provider: str | None = Field(
        default=None, description="moderation: an OpenAI-format provider (its /moderations)."
    )
    model: str = Field(default="omni-moderation-latest", description="moderation: its model.")
    categories: list[str] | None = Field(
        default=None, description="moderation: the categories that count (default: all)."
    )
    threshold: float | None = Field(
        default=None,
        ge=0,
        le=1,
        description="moderation: the score that flags (default: the provider's own verdict).",
    )
    max_repeats: int = Field(default=3, ge=2, description="loop: repeats that make a loop.")
    window: int = Field(default=20, ge=2, description="loop: the last tool calls looked at.")
    stream_window: int = Field(
        default=200, ge=1, description="output: characters of a stream held back to check."
    )


class Config(Section):
    default_user_id: str | None = None
    providers: dict[str, ProviderConfig]
    agents: list[AgentConfig]
    embedders: list[EmbedderConfig] = []
    judges: list[JudgeConfig] = []
    experiments: list[ExperimentConfig] = []
    mcp: dict[str, McpServerConfig] = {}
    auth: AuthConfig | None = None
    history: HistoryConfig = HistoryConfig()
    structured_output: StructuredOutputConfig = StructuredOutputConfig()
    limits: LimitsConfig = LimitsConfig()
    pricing: dict[str, PriceConfig] = {}
    budgets: BudgetsConfig = BudgetsConfig()
    telemetry: TelemetryConfig = TelemetryConfig()
    cache: CacheConfig = CacheConfig()
    evaluations: EvaluationsConfig = EvaluationsConfig()
    reconciliation: ReconciliationConfig = ReconciliationConfig()
    files: FilesConfig = FilesConfig()
    batches: BatchesConfig = BatchesConfig()
    skills: SkillsConfig | None = None
    mcp_server: McpServerSettings = McpServerSettings()
    triggers: list[TriggerConfig] = []
    smoke_tests: list[SmokeTestConfig] = []
    vars: dict[str, str | int | float | bool] = Field(
        default={}, description="Texts that ${vars.<name>} in any string stands for."
    )
    server: ServerConfig = ServerConfig()
    guardrails: list[GuardrailConfig] = []
    public_base_url: str | None = Field(
        default=None,
        description="Our extension: the gateway's URL as a browser reaches it (MCP connect links).",
    )
    aliases: dict[str, str] = Field(
        default={},
        description="Our extension: model names clients send (exact, or a prefix ending in "
        "*) mapped to an agent, experiment or embedder.",
    )

    # The folder of the config file: relative paths in it (files.dir, skills.dir) start
    # there. The loader sets it.
    _base: Path = PrivateAttr(default_factory=Path.cwd)

    def folder(self, configured: str) -> Path:
        """A folder the config names, relative to the config file's own."""
        return self._base / configured

    # The skills found under skills.dir (agents.skills): read from disk, so the loader
    # fills it with every load, after _base.
    _skills: SkillCatalog = PrivateAttr(default_factory=SkillCatalog)

    # Keys accepted without effect (agents.coulisse): the loader fills it.
    _warnings: tuple[ConfigWarning, ...] = PrivateAttr(default=())

    @property
    def warnings(self) -> tuple[ConfigWarning, ...]:
        return self._warnings

    @property
    def skill_catalog(self) -> SkillCatalog:
        return self._skills

    def skill(self, name: str) -> Skill | None:
        return self._skills.skills.get(name)

    @property
    def proxy_auth(self) -> AuthScope | None:
        """Who may call ``/v1`` (None: anyone)."""
        return self.auth.proxy if self.auth is not None else None

    @property
    def admin_auth(self) -> AuthScope | None:
        """Who may use the admin (None: loopback clients only)."""
        return self.auth.admin if self.auth is not None else None

    def provider_kind(self, name: str) -> str:
        """The wire format of the provider called ``name`` (its ``kind``, else its name)."""
        return self.providers[name].kind or name

    def target(self, model: str) -> str:
        """The agent, experiment or embedder a ``model`` a client sent names: itself when
        configured, else the alias's target (an exact alias first, then the longest ``*``
        prefix), else itself (unknown)."""
        if self.agent(model) or self.experiment(model) or self.embedder(model):
            return model
        if model in self.aliases:
            return self.aliases[model]
        prefixes = [key for key in self.aliases if key.endswith("*") and model.startswith(key[:-1])]
        return self.aliases[max(prefixes, key=len)] if prefixes else model

    def agent(self, name: str) -> AgentConfig | None:
        return next((agent for agent in self.agents if agent.name == name), None)

    def experiment(self, name: str) -> ExperimentConfig | None:
        return next((exp for exp in self.experiments if exp.name == name), None)

    def judge(self, name: str) -> JudgeConfig | None:
        return next((judge for judge in self.judges if judge.name == name), None)

    def embedder(self, name: str) -> EmbedderConfig | None:
        return next((embedder for embedder in self.embedders if embedder.name == name), None)

    def trigger(self, name: str) -> TriggerConfig | None:
        return next((trigger for trigger in self.triggers if trigger.name == name), None)

    def hook(self, segment: str) -> TriggerConfig | None:
        """The trigger whose webhook answers at /hooks/<segment>: its ``path``, else its name."""
        return next(
            (
                trigger
                for trigger in self.triggers
                if (trigger.path or f"/hooks/{trigger.name}") == f"/hooks/{segment}"
            ),
            None,
        )

    def guardrail(self, name: str) -> GuardrailConfig | None:
        return next((guard for guard in self.guardrails if guard.name == name), None)

    def smoke_test(self, name: str) -> SmokeTestConfig | None:
        return next((test for test in self.smoke_tests if test.name == name), None)

    def persona(self, test: SmokeTestConfig) -> AgentConfig | None:
        """The agent that plays the user of ``test`` (an inline persona is made one)."""
        persona = test.persona
        if isinstance(persona, str):
            return self.agent(persona)
        return AgentConfig(
            name=f"persona:{test.name}",
            provider=persona.provider,
            model=persona.model,
            preamble=persona.preamble,
            history=False,
        )

    def extractor(self, memory: MemoryConfig) -> AgentConfig | None:
        """The agent that picks the facts ``memory`` keeps (an inline one is made one)."""
        extractor = memory.extractor
        if extractor is None or isinstance(extractor, str):
            return self.agent(extractor) if extractor is not None else None
        return AgentConfig(
            name="memory:extractor",
            provider=extractor.provider,
            model=extractor.model,
            history=False,
        )
