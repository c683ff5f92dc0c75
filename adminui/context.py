"""What admin request code borrows from the process, as the request carries it."""

from typing import Any, Protocol

from django.http import HttpRequest
from django_htmx.middleware import HtmxDetails

from agents.schema import AuthScope, Config
from agents.snapshot import ConfigHolder
from core.requestlog import RequestLog
from inference.evaluations.records import EvaluationRow
from inference.evaluations.spec import Plan
from inference.memory.store import Memory
from inference.reconciliation.records import Reconciliation
from inference.status import DeploymentStatus, McpServerStatus


class AdminRuntime(Protocol):
    holder: ConfigHolder

    def mcp_status(self) -> list[McpServerStatus]: ...
    def deployment_status(self) -> list[DeploymentStatus]: ...
    async def remember(self, user_id: str, agent: str, text: str) -> Memory: ...
    async def start_evaluation(self, plan: Plan, config: Config) -> EvaluationRow: ...
    async def cancel_evaluation(self, evaluation_id: int) -> tuple[EvaluationRow | None, bool]: ...
    async def start_smoke_test(self, name: str) -> dict[str, Any] | None: ...
    async def reconcile(self, config: Config) -> tuple[bool, Reconciliation]: ...


class AdminRequest(HttpRequest):
    """A request as the context and htmx middleware hand it to the admin's code."""

    runtime: AdminRuntime
    log: RequestLog
    htmx: HtmxDetails
    admin_user: str | None  # who authenticated, under auth.admin (adminui.access.auth)


def admin_scope(request: AdminRequest) -> AuthScope | None:
    """``auth.admin`` of the config serving the request (None: loopback clients only)."""
    config = request.runtime.holder.config
    return config.admin_auth if config is not None else None
