"""A circuit breaker per deployment, shared by every request of the process.

After ``circuit.failures`` consecutive retryable failures a deployment's circuit opens:
requests skip it while another deployment is available. ``circuit.cooldown`` seconds
later one request is let through as a probe; its success closes the circuit, its failure
opens it again for another cooldown. When every deployment of a route is open, the one
that opened longest ago is tried rather than refusing the request.
"""

import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from agents.schema import CircuitConfig, Config
from core.metrics import observe_circuit
from inference.routing.deployments import Deployment, route_of
from inference.status import CircuitState, DeploymentStatus


@dataclass
class _Circuit:
    failures: int = 0  # consecutive retryable failures
    opened_at: float | None = None  # time.monotonic() when it last opened
    probing: bool = False  # a probe is under way


class Circuits:
    def __init__(self) -> None:
        self._circuits: dict[tuple[str, str], _Circuit] = {}

    def available(self, deployment: Deployment, settings: CircuitConfig) -> bool:
        circuit = self._circuits.get((deployment.provider, deployment.model))
        if circuit is None or circuit.opened_at is None:
            return True
        return not circuit.probing and time.monotonic() - circuit.opened_at >= settings.cooldown

    def longest_open(self, deployments: Iterable[Deployment]) -> Deployment:
        """Of deployments that are all open, the one that opened longest ago."""

        def opened(deployment: Deployment) -> float:
            circuit = self._circuits.get((deployment.provider, deployment.model))
            return (circuit.opened_at or 0.0) if circuit is not None else 0.0

        return min(deployments, key=opened)

    def starting(self, deployment: Deployment) -> bool:
        """Note that a call to ``deployment`` starts; True if it is the probe of an open
        circuit (its outcome must then be reported, ``abandoned`` if there is none)."""
        circuit = self._circuits.get((deployment.provider, deployment.model))
        if circuit is None or circuit.opened_at is None:
            return False
        circuit.probing = True
        return True

    def succeeded(self, deployment: Deployment) -> None:
        circuit = self._circuits.get((deployment.provider, deployment.model))
        if circuit is None:
            return
        if circuit.opened_at is not None:
            observe_circuit(deployment.provider, deployment.model, opened=False)
        circuit.failures, circuit.opened_at, circuit.probing = 0, None, False

    def failed(self, deployment: Deployment, settings: CircuitConfig) -> None:
        key = (deployment.provider, deployment.model)
        circuit = self._circuits.setdefault(key, _Circuit())
        circuit.failures += 1
        was_open, circuit.probing = circuit.opened_at is not None, False
        if settings.failures and (was_open or circuit.failures >= settings.failures):
            circuit.opened_at = time.monotonic()
            if not was_open:
                observe_circuit(deployment.provider, deployment.model, opened=True)

    def abandoned(self, deployment: Deployment) -> None:
        """A probe ended without an outcome (its request went away): another may probe."""
        circuit = self._circuits.get((deployment.provider, deployment.model))
        if circuit is not None:
            circuit.probing = False

    def status(self, config: Config) -> list[DeploymentStatus]:
        """The state of every deployment and fallback the config names."""
        routes = [route_of(served) for served in (*config.agents, *config.judges)]
        named = dict.fromkeys((d.provider, d.model) for route in routes for d in route)
        now, wall = time.monotonic(), datetime.now(UTC)
        found = []
        for provider, model in named:
            circuit = self._circuits.get((provider, model), _Circuit())
            state: CircuitState = "closed"
            opened_since = None
            if circuit.opened_at is not None:
                settings = config.providers[provider].circuit
                cooled = now - circuit.opened_at >= settings.cooldown
                state = "half-open" if circuit.probing or cooled else "open"
                opened_since = wall - timedelta(seconds=now - circuit.opened_at)
            found.append(DeploymentStatus(provider, model, state, circuit.failures, opened_since))
        return found
