"""The Prometheus metrics of the gateway, observed where a request finishes.

Under ``serve --workers`` every worker writes its samples to files in
``PROMETHEUS_MULTIPROC_DIR`` (prometheus-client's multi-process mode, chosen when the
variable is set before this module is imported) and ``/metrics`` adds them up.
"""

from prometheus_client import Counter, Gauge, Histogram

from core.requestlog import RequestLog

# The error codes of requests that never reached a provider because a budget refused them.
BUDGET_REFUSAL_CODES = frozenset({"rate_limit_exceeded", "insufficient_quota"})

REQUESTS = Counter(
    "gateway_requests",
    "Requests to /v1, by agent, HTTP status and streaming",
    ["agent", "status", "stream"],
)
LATENCY = Histogram(
    "gateway_request_duration_seconds",
    "Time from a /v1 request's arrival to the end of its response",
    ["stream"],
    buckets=(0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120),
)
OVERHEAD = Histogram(
    "gateway_overhead_seconds",
    "Time a /v1 request spent in the gateway, not waiting on an upstream provider",
    ["stream"],
    buckets=(0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1),
)
TOKENS = Counter("gateway_tokens", "Tokens billed, by agent and kind", ["agent", "kind"])
UPSTREAM_ERRORS = Counter(
    "gateway_upstream_errors",
    "Requests that failed because of an upstream provider, by provider and error code",
    ["provider", "code"],
)
UPSTREAM_ATTEMPTS = Counter(
    "gateway_upstream_attempts",
    "Upstream calls, retries and fallbacks included, by provider name, model and outcome "
    "(ok, or the error code)",
    ["provider", "model", "outcome"],
)
CIRCUIT_OPEN = Gauge(
    "gateway_circuit_open",
    "1 while a deployment's circuit breaker is open (in any live worker)",
    ["provider", "model"],
    multiprocess_mode="livemax",
)
COST = Counter(
    "gateway_cost_usd",
    "USD spent on upstream calls billed to users, by agent and the provider (name) and model "
    "that answered (calls without a known price are not counted)",
    ["agent", "provider", "model"],
)
CACHE_REQUESTS = Counter(
    "gateway_cache_requests",
    "Requests to agents with a response cache, by agent and result (hit, miss, bypass)",
    ["agent", "result"],
)
CACHE_SAVED = Counter(
    "gateway_cache_saved_usd",
    "USD the response cache saved: what its answers cost when first paid, by agent",
    ["agent"],
)
CACHE_GATED = Counter(
    "gateway_cache_gated",
    "Semantic cache candidates above the similarity that the gate stopped (each a miss), by agent",
    ["agent"],
)
BUDGET_REFUSALS = Counter("gateway_budget_refusals", "Requests refused by a token budget")
QUOTA_REFUSALS = Counter(
    "gateway_quota_refusals",
    "Requests refused by a budget or limit before any upstream call, by error code "
    "(insufficient_quota: a USD budget; rate_limit_exceeded: tokens or requests)",
    ["reason"],
)
GUARDRAIL_EVENTS = Counter(
    "gateway_guardrail_events",
    "Guardrails that acted, by guardrail and outcome (redacted, blocked, warned)",
    ["guardrail", "action"],
)
JUDGE_SCORES = Histogram(
    "gateway_judge_score",
    "Scores judges gave replies (0 to 10), by judge, agent and criterion",
    ["judge", "agent", "criterion"],
    buckets=tuple(range(11)),
)

# The OpenTelemetry GenAI client metrics (semantic conventions' names and buckets): one
# observation per upstream attempt.
_GENAI_LABELS = [
    "gen_ai_operation_name",
    "gen_ai_provider_name",
    "gen_ai_request_model",
    "gen_ai_response_model",
    "error_type",
]
GENAI_DURATION = Histogram(
    "gen_ai_client_operation_duration_seconds",
    "GenAI operation duration (gen_ai.client.operation.duration): each upstream attempt",
    _GENAI_LABELS,
    buckets=(
        0.01,
        0.02,
        0.04,
        0.08,
        0.16,
        0.32,
        0.64,
        1.28,
        2.56,
        5.12,
        10.24,
        20.48,
        40.96,
        81.92,
    ),
)
GENAI_TOKENS = Histogram(
    "gen_ai_client_token_usage",
    "Tokens used per upstream call (gen_ai.client.token.usage), by gen_ai_token_type",
    [*_GENAI_LABELS[:4], "gen_ai_token_type"],
    buckets=tuple(float(4**power) for power in range(14)),
)


def observe_request(log: RequestLog) -> None:
    """Count one finished request (only the API's: the admin and probes are not traffic)."""
    if not log.dialect:
        return
    streamed = "true" if log.stream else "false"
    REQUESTS.labels(log.agent, str(log.status), streamed).inc()
    LATENCY.labels(streamed).observe(log.latency_ms / 1000)
    OVERHEAD.labels(streamed).observe(log.overhead_ms / 1000)
    if log.prompt_tokens:
        TOKENS.labels(log.agent, "prompt").inc(log.prompt_tokens)
    if log.completion_tokens:
        TOKENS.labels(log.agent, "completion").inc(log.completion_tokens)
    if log.cost_usd:
        provider, _, model = log.upstream.partition("/")
        COST.labels(log.agent, provider, model).inc(log.cost_usd)
    if log.cache:
        CACHE_REQUESTS.labels(log.agent, log.cache).inc()
    if log.saved_usd:
        CACHE_SAVED.labels(log.agent).inc(log.saved_usd)
    if log.error.startswith("upstream_"):
        UPSTREAM_ERRORS.labels(log.provider, log.error).inc()
    elif log.error in BUDGET_REFUSAL_CODES:
        QUOTA_REFUSALS.labels(log.error).inc()
        if log.error == "rate_limit_exceeded":
            BUDGET_REFUSALS.inc()


def observe_judge_scores(judge: str, agent: str, scores: dict[str, float]) -> None:
    for criterion, score in scores.items():
        JUDGE_SCORES.labels(judge, agent, criterion).observe(score)


def observe_cache_gated(agent: str) -> None:
    CACHE_GATED.labels(agent).inc()


def observe_attempt(provider: str, model: str, outcome: str) -> None:
    UPSTREAM_ATTEMPTS.labels(provider, model, outcome).inc()


def observe_circuit(provider: str, model: str, *, opened: bool) -> None:
    CIRCUIT_OPEN.labels(provider, model).set(1 if opened else 0)


def observe_operation(
    operation: str,
    provider: str,
    model: str,
    response_model: str | None,
    seconds: float,
    error_type: str | None,
    input_tokens: int,
    output_tokens: int,
) -> None:
    """One upstream attempt (``operation`` "chat" or "embeddings") in the GenAI metrics
    (tokens only for one that answered)."""
    labels = (operation, provider, model, response_model or "")
    GENAI_DURATION.labels(*labels, error_type or "").observe(seconds)
    if error_type is None:
        GENAI_TOKENS.labels(*labels, "input").observe(input_tokens)
        if operation == "chat":
            GENAI_TOKENS.labels(*labels, "output").observe(output_tokens)
