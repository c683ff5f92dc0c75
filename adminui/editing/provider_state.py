"""The live state of each provider's deployments: a column of the providers pages, and
``/admin/providers/{name}/state`` (each deployment's circuit breaker as this process
sees it)."""

from dataclasses import asdict
from datetime import datetime
from typing import Any

from ninja import Router
from pydantic import BaseModel

from adminui.context import AdminRequest
from adminui.rendering.errors import AdminError
from adminui.rendering.negotiation import respond
from adminui.schemas import errors
from inference.status import DeploymentStatus


class DeploymentStateOut(BaseModel):
    provider: str
    model: str
    state: str
    failures: int
    opened: datetime | None


class ProviderStateOut(BaseModel):
    name: str
    deployments: list[DeploymentStateOut]


def _by_provider(request: AdminRequest) -> dict[str, list[DeploymentStatus]]:
    found: dict[str, list[DeploymentStatus]] = {}
    for status in request.runtime.deployment_status():
        found.setdefault(status.provider, []).append(status)
    return found


def summaries(request: AdminRequest) -> dict[str, str]:
    """Each provider's deployments in a few words, by provider name."""
    return {
        provider: "; ".join(f"{status.model}: {status.summary}" for status in statuses)
        for provider, statuses in _by_provider(request).items()
    }


def add_state_route(router: Router) -> None:
    @router.get(
        "/{name}/state",
        response={200: ProviderStateOut, **errors(404)},
        operation_id="read_provider_state",
        url_name="providers_state",
        summary="Each deployment of the provider and the state of its circuit breaker",
    )
    def read_state(request: AdminRequest, name: str) -> Any:
        holder = request.runtime.holder
        if holder.config is None or name not in holder.config.providers:
            raise AdminError(404, f"provider '{name}' is not configured", "not_found")
        statuses = _by_provider(request).get(name, [])
        data = {"name": name, "deployments": [asdict(status) for status in statuses]}
        text = ", ".join(f"{status.model}: {status.summary}" for status in statuses)
        return respond(
            request, data, "adminui/provider_state.html", status_text=text or "no deployment"
        )
