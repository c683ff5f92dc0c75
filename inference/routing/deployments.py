"""Where an agent's or judge's model calls may go (docs/resilience.md).

Its own ``provider``/``model`` is the first deployment; ``deployments`` are more that
share the load by weight; ``fallbacks`` are tried in order once every deployment failed.
"""

from collections.abc import Iterator
from dataclasses import dataclass

from agents.schema import Config, Served
from inference.neutral.calls import Answerer
from inference.providers.registry import PROVIDER_CLASSES
from inference.providers.toolnames import ToolNameRule, strictest


@dataclass(frozen=True)
class Deployment(Answerer):
    """A provider (its name under ``providers:``) and model an agent's calls may go to."""

    weight: float = 1.0


@dataclass(frozen=True)
class Route:
    deployments: tuple[Deployment, ...]
    fallbacks: tuple[Deployment, ...] = ()

    @property
    def stages(self) -> tuple[tuple[Deployment, ...], ...]:
        """What is tried in turn: the deployments together, then each fallback alone."""
        return (self.deployments, *((fallback,) for fallback in self.fallbacks))

    def __iter__(self) -> Iterator[Deployment]:
        yield from self.deployments
        yield from self.fallbacks

    def tool_names(self, config: Config) -> ToolNameRule:
        """The tool names every provider of the route accepts, so the agent's tools keep
        their names whichever deployment or fallback answers."""
        kinds = dict.fromkeys(config.provider_kind(deployment.provider) for deployment in self)
        return strictest([PROVIDER_CLASSES[kind].tool_names for kind in kinds])


def route_of(served: Served) -> Route:
    own = Deployment(served.provider, served.model, served.weight)
    more = (Deployment(item.provider, item.model, item.weight) for item in served.deployments)
    fallbacks = (Deployment(item.provider, item.model) for item in served.fallbacks)
    return Route((own, *more), tuple(fallbacks))
