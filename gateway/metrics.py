"""``GET /metrics``: the Prometheus text format, for whoever may use the admin.

The counters and histograms are defined and observed in ``core.metrics``. Under
``serve --workers`` (``PROMETHEUS_MULTIPROC_DIR`` set) the samples of every worker are
added up; MCP server states are read at scrape time from the answering process, spend
reconciliation's drifts from the database (the same whichever process answers).
"""

import os
from collections.abc import Iterator
from typing import cast

from django.http import HttpRequest, HttpResponse
from prometheus_client import CONTENT_TYPE_LATEST, REGISTRY, CollectorRegistry, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.multiprocess import MultiProcessCollector
from prometheus_client.registry import Collector

from adminui.access.guard import refusal_of
from adminui.context import AdminRequest
from gateway import runtime
from inference.reconciliation.records import drift_ratios
from inference.status import McpServerStatus

MCP_STATES = ("connecting", "connected", "unavailable", "per-user")


class McpCollector(Collector):
    def __init__(self, servers: list[McpServerStatus]) -> None:
        self.servers = servers

    def collect(self) -> Iterator[Metric]:
        state = GaugeMetricFamily(
            "gateway_mcp_server_state",
            "1 for the state each MCP server is in (as the process answering the scrape sees it)",
            labels=["server", "transport", "state"],
        )
        tools = GaugeMetricFamily(
            "gateway_mcp_server_tools",
            "Tools each MCP server listed last",
            labels=["server"],
        )
        for server in self.servers:
            for name in MCP_STATES:
                state.add_metric([server.name, server.transport, name], float(server.state == name))
            tools.add_metric([server.name], len(server.tools))
        yield state
        yield tools


class DriftCollector(Collector):
    def __init__(self, ratios: dict[tuple[str, str], float]) -> None:
        self.ratios = ratios

    def collect(self) -> Iterator[Metric]:
        drift = GaugeMetricFamily(
            "gateway_spend_drift_ratio",
            "(computed - billed) / billed spend of each provider's model on the day it drifted "
            "most of the last reconciliation.days days (models billed nothing left out)",
            labels=["provider", "model"],
        )
        for (provider, model), ratio in sorted(self.ratios.items()):
            drift.add_metric([provider, model], ratio)
        yield drift


def metrics(request: HttpRequest) -> HttpResponse:
    """Synchronous: under multi-process mode it reads the workers' files."""
    refusal = refusal_of(cast(AdminRequest, request))
    if refusal is not None:
        return HttpResponse(refusal.message, status=refusal.status, content_type="text/plain")
    registry = CollectorRegistry()
    if "PROMETHEUS_MULTIPROC_DIR" in os.environ:
        MultiProcessCollector(registry)
    else:
        registry.register(cast(Collector, REGISTRY))
    registry.register(McpCollector(runtime.current().mcp_status()))
    config = runtime.current().holder.config
    registry.register(DriftCollector(drift_ratios(config) if config is not None else {}))
    return HttpResponse(generate_latest(registry), content_type=CONTENT_TYPE_LATEST)
