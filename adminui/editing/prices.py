"""What each agent's models cost: a column of the agents pages, naming the models of its
route (deployments and fallbacks) that have no known price."""

from adminui.context import AdminRequest
from agents.schema import AgentConfig, Config
from inference.money.prices import Price, price_of


def summaries(request: AdminRequest) -> dict[str, str]:
    config = request.runtime.holder.config
    if config is None:
        return {}
    return {agent.name: _summary(config, agent) for agent in config.agents}


def _summary(config: Config, agent: AgentConfig) -> str:
    upstreams = [
        (agent.provider, agent.model),
        *((item.provider, item.model) for item in agent.deployments),
        *((item.provider, item.model) for item in agent.fallbacks),
    ]
    unknown = [f"{p}/{m}" for p, m in upstreams if price_of(config, p, m) is None]
    if unknown:
        return f"no price for {', '.join(unknown)}: cost unknown"
    price = price_of(config, agent.provider, agent.model)
    return _per_million(price) if price is not None else ""


def _per_million(price: Price) -> str:
    if price.tiered is not None:
        return "tiered by prompt size (genai-prices)"
    return f"${price.input:g} in / ${price.output:g} out per million tokens"
