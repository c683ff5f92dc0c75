"""Request and response schemas of the admin API beyond the config's own (agents.schema)."""

from datetime import date, datetime

from pydantic import BaseModel, ConfigDict, Field

from agents.schema import McpServerConfig, ProviderConfig


class ProviderCreate(ProviderConfig):
    name: str | None = Field(
        default=None,
        description="The provider's name: the key under `providers` (default: its `kind`).",
    )


class McpServerCreate(McpServerConfig):
    name: str = Field(description="The server's name: the key under `mcp`.")


class RestoreIn(BaseModel):
    """Empty: a restore takes everything from the revision."""

    model_config = ConfigDict(extra="forbid")


class ErrorDetail(BaseModel):
    type: str
    message: str
    code: str | None = None
    param: str | None = None
    problems: list[str] = Field(
        default=[], description="Every message of the config validator, verbatim (422)."
    )


class ErrorOut(BaseModel):
    error: ErrorDetail


class RevisionOut(BaseModel):
    id: int
    created_at: datetime
    author: str
    etag: str
    diff: str = Field(description="Unified diff from the previous revision, secrets masked.")


class RevisionPage(BaseModel):
    data: list[RevisionOut]
    next: str | None


class MessageOut(BaseModel):
    user: str
    model: str
    role: str
    content: str
    created_at: datetime


class MessagePage(BaseModel):
    data: list[MessageOut]
    next: str | None


class UsageWindows(BaseModel):
    hour: int
    day: int
    month: int


class CostWindows(BaseModel):
    hour: float
    day: float
    month: float


class UsageOut(BaseModel):
    user: str
    windows: UsageWindows  # tokens
    cost_usd: CostWindows  # what those tokens cost (calls without a known price left out)


class AgentSummary(BaseModel):
    name: str
    provider: str
    model: str
    requests_24h: int
    tokens_24h: int


class DriftRowOut(BaseModel):
    """One row of spend reconciliation: a provider's bill for a model on a UTC day."""

    provider: str
    day: date
    model: str
    billed_usd: float
    computed_usd: float
    drift_usd: float = Field(description="computed_usd - billed_usd")
    drift_pct: float | None = Field(description="drift_usd in % of billed_usd (null: 0 billed)")
    flagged: bool = Field(description="|drift_pct| is above reconciliation.alert_pct")


class OverviewOut(BaseModel):
    agents: list[AgentSummary]
    experiments: list[str]
    problems: list[str] = Field(description="Why the file on disk is not live, if it is not.")
    spend_drift: list[DriftRowOut] = Field(
        description="Reconciliation's rows over alert_pct, the last reconciliation.days days."
    )


class ScoreOut(BaseModel):
    id: int
    created_at: datetime
    user: str
    agent: str
    experiment: str
    variant: str
    judge: str
    criterion: str
    score: int = Field(ge=0, le=10)
    reasoning: str
    judge_model: str
    completion_id: str


class ScorePage(BaseModel):
    data: list[ScoreOut]
    next: str | None


class VariantStatsOut(BaseModel):
    agent: str
    users: int
    requests: int
    tokens: int
    scores: dict[str, float] = Field(description='Mean score by "judge.criterion".')
    mean_cost_usd: float | None = Field(description="Per request (null: no known cost yet).")
    mean_score: float | None = Field(description="A bandit's: the mean of its metric.")
    mean_reward: float | None = Field(
        description="A bandit's: the mean score less cost_weight points per USD of mean cost."
    )


class ExperimentStatsOut(BaseModel):
    experiment: str
    strategy: str
    metric: str | None = Field(description="A bandit's judge.criterion.")
    cost_weight: float | None = Field(description="A bandit's score points per USD.")
    variants: list[VariantStatsOut]


def errors(*statuses: int) -> dict[int, type[ErrorOut]]:
    """A route's error responses for its OpenAPI: 400 and 403 (every route), and ``statuses``."""
    return dict.fromkeys((400, 403, *statuses), ErrorOut)
