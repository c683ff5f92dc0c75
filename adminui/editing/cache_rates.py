"""How often each agent's response cache answered in the last day: a column of the
agents pages (the share of requests it answered wholly)."""

from datetime import timedelta

from django.utils import timezone

from adminui.context import AdminRequest
from inference.ledger.queries import traffic_since

WINDOW = timedelta(days=1)


def summaries(request: AdminRequest) -> dict[str, str]:
    config = request.runtime.holder.config
    if config is None:
        return {}
    traffic = traffic_since(timezone.now() - WINDOW)
    shown = {}
    for agent in config.agents:
        if agent.cache is None:
            shown[agent.name] = "off"
            continue
        seen = traffic.get(agent.name)
        if seen is None or not seen.requests:
            shown[agent.name] = f"{agent.cache.mode}: no requests"
        else:
            rate = seen.hits / seen.requests
            shown[agent.name] = f"{agent.cache.mode}: {rate:.0%} hits of {seen.requests} requests"
    return shown
