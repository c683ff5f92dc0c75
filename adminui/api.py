"""The admin API: one NinjaAPI at ``/admin`` serving JSON, pages and fragments, and its OpenAPI."""

from typing import Any

from django.http import Http404, HttpResponse
from ninja import NinjaAPI
from ninja.errors import HttpError, ValidationError

from adminui.batches import routes as batches
from adminui.context import AdminRequest
from adminui.editing import (
    cache_rates,
    config_file,
    mcp_state,
    prices,
    provider_state,
    revisions,
    skills,
)
from adminui.editing.collections import Column, ItemDetails, collection_router
from adminui.guardrails import routes as guardrails
from adminui.reconciliation import routes as reconciliation
from adminui.records import (
    automation,
    cache,
    evaluations,
    keys,
    live,
    mcp_connections,
    memories,
    overview,
    requests,
    scores,
    spend,
)
from adminui.rendering.bodies import AdminParser, BodyError
from adminui.rendering.errors import AdminError, error_response, refusal
from adminui.schemas import McpServerCreate, ProviderCreate
from agents.loader import ConfigError
from agents.resources import AGENTS, EXPERIMENTS, JUDGES, MCP, PROVIDERS
from agents.store import StoreError

JSON = "application/json"
YAML = "application/yaml"


class AdminAPI(NinjaAPI):
    def get_openapi_schema(self, **kwargs: Any) -> Any:
        """Declare what the routes serve besides JSON: YAML bodies, HTML pages."""
        schema = super().get_openapi_schema(**kwargs)
        for methods in schema["paths"].values():
            for method, operation in methods.items():
                content = operation.get("requestBody", {}).get("content", {})
                if JSON in content:
                    content.setdefault(YAML, content[JSON])
                ok = operation["responses"].get(200, {}).get("content", {})
                if method == "get" and JSON in ok:
                    ok.setdefault("text/html", {"schema": {"type": "string"}})
        return schema


api = AdminAPI(
    title="Gateway admin",
    version="1",
    description="Content-negotiated editing of the gateway's config file (JSON, YAML, HTML).",
    urls_namespace="admin",
    docs_url=None,
    parser=AdminParser(),
)
api.add_router("", overview.router)
api.add_router("", scores.router)
agent_details = ItemDetails("adminui/_agent_results.html", scores.agent_results)
agent_prices = Column("Price", prices.summaries)
agent_caches = Column("Cache (24 h)", cache_rates.summaries)
api.add_router(
    "/agents",
    collection_router(
        AGENTS, AGENTS.schema, columns=(agent_prices, agent_caches), details=agent_details
    ),
)
api.add_router("/judges", collection_router(JUDGES, JUDGES.schema))
experiment_details = ItemDetails("adminui/_experiment_results.html", scores.experiment_results)
experiments_router = collection_router(EXPERIMENTS, EXPERIMENTS.schema, details=experiment_details)
scores.add_stats_route(experiments_router)
api.add_router("/experiments", experiments_router)
provider_states = Column("State", provider_state.summaries, "no deployment", "providers_state")
providers_router = collection_router(PROVIDERS, ProviderCreate, columns=(provider_states,))
provider_state.add_state_route(providers_router)
api.add_router("/providers", providers_router)
# Before the MCP servers' routes: /mcp/connections is not a server's page.
api.add_router("", mcp_connections.router)
mcp_states = Column("State", mcp_state.summaries, "not running", "mcp_state")
mcp_router = collection_router(MCP, McpServerCreate, columns=(mcp_states,))
mcp_state.add_state_route(mcp_router)
api.add_router("/mcp", mcp_router)
api.add_router("", config_file.router)
api.add_router("", revisions.router)
api.add_router("", skills.router)
api.add_router("", live.router)
api.add_router("", keys.router)
api.add_router("", spend.router)
api.add_router("", reconciliation.router)
api.add_router("", requests.router)
api.add_router("", memories.router)
api.add_router("", guardrails.router)
api.add_router("", cache.router)
api.add_router("", evaluations.router)
api.add_router("", automation.router)
api.add_router("", batches.router)


@api.exception_handler(AdminError)
def _admin_error(request: AdminRequest, error: AdminError) -> HttpResponse:
    return error_response(request, error)


@api.exception_handler(ConfigError)
@api.exception_handler(StoreError)
def _refused_write(request: AdminRequest, error: ConfigError | StoreError) -> HttpResponse:
    return error_response(request, refusal(error))


@api.exception_handler(HttpError)
def _http_error(request: AdminRequest, error: HttpError) -> HttpResponse:
    cause = error.__cause__
    if isinstance(cause, BodyError):
        return error_response(request, AdminError(400, str(cause), "malformed_body", [str(cause)]))
    return error_response(request, AdminError(error.status_code, str(error), "http_error"))


@api.exception_handler(ValidationError)
def _request_error(request: AdminRequest, error: ValidationError) -> HttpResponse:
    problems = [
        f"{'.'.join(str(part) for part in item['loc'])}: {item['msg']}" for item in error.errors
    ]
    return error_response(
        request, AdminError(400, "; ".join(problems), "malformed_request", problems)
    )


@api.exception_handler(Http404)
def _not_found(request: AdminRequest, error: Http404) -> HttpResponse:
    return error_response(request, AdminError(404, f"nothing at {request.path}", "not_found"))
