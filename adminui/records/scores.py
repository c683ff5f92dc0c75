"""Judge scores: the list (``/admin/scores``), each experiment's results by variant
(``/admin/experiments/{name}/stats``), and the charts on the agent and experiment pages."""

from dataclasses import asdict
from datetime import timedelta
from typing import Any

from django.utils import timezone
from ninja import Router

from adminui.context import AdminRequest
from adminui.records.charts import LineChart, line_chart
from adminui.rendering.negotiation import is_html, respond
from adminui.rendering.paging import page
from adminui.schemas import ExperimentStatsOut, ScorePage, errors
from agents import store
from agents.resources import EXPERIMENTS
from inference.ledger import queries

router = Router(tags=["records"])
CHART_DAYS = 30


@router.get(
    "/scores",
    response={200: ScorePage, **errors()},
    operation_id="list_scores",
    url_name="scores",
    summary="Judge scores, newest first (filters: agent, experiment, judge)",
)
def list_scores(
    request: AdminRequest,
    agent: str | None = None,
    experiment: str | None = None,
    judge: str | None = None,
    cursor: str | None = None,
) -> Any:
    rows, following = page(
        lambda before, limit: queries.scores(agent, experiment, judge, before, limit), cursor
    )
    data = {"data": [asdict(row) for row in rows], "next": following}
    filters = {"agent": agent or "", "experiment": experiment or "", "judge": judge or ""}
    charts = []
    if is_html(request) and (agent or experiment):
        charts = agent_charts(agent) if agent else experiment_charts(experiment or "")
    return respond(request, data, "adminui/scores.html", filters=filters, charts=charts)


def add_stats_route(router: Router) -> None:
    @router.get(
        "/{name}/stats",
        response={200: ExperimentStatsOut, **errors(404)},
        operation_id="read_experiment_stats",
        url_name="experiments_stats",
        summary="Per variant: users, requests, tokens, mean cost, mean score per judge "
        "criterion; a bandit's mean score and reward",
    )
    def experiment_stats(request: AdminRequest, name: str) -> Any:
        data = experiment_results(request, name)
        return respond(request, data["stats"], "adminui/experiment_stats.html", **data)


def experiment_results(request: AdminRequest, name: str) -> dict[str, Any]:
    """An experiment's stats by variant and its charts (404 if there is no such one)."""
    entry = store.entry(request.runtime.holder, EXPERIMENTS, name)
    variants = [str(v.get("agent")) for v in entry.get("variants") or [] if isinstance(v, dict)]
    config = request.runtime.holder.config
    live = config.experiment(name) if config is not None else None
    metric = live.bandit_metric if live is not None and live.strategy == "bandit" else None
    weight = live.objective.cost_weight if live is not None and live.objective else 0.0
    rows = queries.experiment_stats(name, variants, metric, weight)
    stats = {
        "experiment": name,
        "strategy": str(entry.get("strategy")),
        "metric": metric,
        "cost_weight": weight if metric is not None else None,
        "variants": [asdict(row) for row in rows],
    }
    charts = experiment_charts(name) if is_html(request) else []
    return {"stats": stats, "charts": charts, "experiment": name}


def agent_results(request: AdminRequest, name: str) -> dict[str, Any]:
    """The agent's scores, and what the live config makes of its entry (Coulisse's
    ``memory.user_state``, ``vars`` and ``max_turns`` included)."""
    config = request.runtime.holder.config
    loaded = config.agent(name) if config is not None else None
    return {"charts": agent_charts(name), "agent": name, "loaded": loaded}


def experiment_charts(name: str) -> list[LineChart]:
    """Per judge criterion, the mean score of each variant over time."""
    bucket, charts = queries.score_trend(experiment=name, since=_chart_start())
    return [line_chart(f"{metric} by variant", points, bucket) for metric, points in charts.items()]


def agent_charts(name: str) -> list[LineChart]:
    """The agent's mean score per judge criterion over time."""
    bucket, charts = queries.score_trend(agent=name, since=_chart_start())
    return [
        line_chart(f"{name}: mean score per criterion", points, bucket)
        for points in charts.values()
    ]


def _chart_start() -> Any:
    return timezone.now() - timedelta(days=CHART_DAYS)
