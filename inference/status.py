"""How the live parts of ``/v1`` are doing, for the admin to show."""

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

# "per-user": the server signs each user in (oauth), and is called with their own tokens.
McpState = Literal["connecting", "connected", "unavailable", "per-user"]


@dataclass(frozen=True)
class McpServerStatus:
    name: str
    transport: str
    state: McpState
    tools: tuple[str, ...]  # the tools it listed last
    last_error: str  # why it is unavailable ("" when connected)
    since: datetime  # when it entered this state

    @property
    def summary(self) -> str:
        if self.state == "connected":
            return f"connected ({len(self.tools)} tool{'' if len(self.tools) == 1 else 's'})"
        if self.state == "connecting":
            return "connecting"
        if self.state == "per-user":
            return "signs each user in (OAuth)"
        return f"unavailable: {self.last_error}"


CircuitState = Literal["closed", "open", "half-open"]


@dataclass(frozen=True)
class DeploymentStatus:
    """One deployment's circuit breaker, as this process sees it."""

    provider: str
    model: str
    state: CircuitState
    failures: int  # consecutive retryable failures
    opened: datetime | None  # when the circuit last opened (None while closed)

    @property
    def summary(self) -> str:
        if self.state == "closed":
            return "healthy" if not self.failures else f"healthy ({self.failures} failed)"
        return self.state
