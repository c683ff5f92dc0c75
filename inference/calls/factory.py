"""The layers of the model-call seam (``inference.neutral.calls``), built in one place for
one conversation of one caller, innermost first: routing (deployments, retries,
fallbacks, circuit breakers; for a batch line in native mode, its seat in the provider
batch instead), the response cache, guardrails, tracing, the turn's recorder, and
money's admission. Each is a wrapper with the same interface; a new step that every
call goes through is one wrapper and one line here."""

from agents.schema import AgentConfig, Config
from inference.cache.calls import CachedCalls, CacheEngine
from inference.cache.use import CacheControl
from inference.calls.recorder import CallRecorder, RecordedCalls
from inference.calls.seats import SEAT, NativeCalls
from inference.calls.tracing import TracedCalls
from inference.guardrails.calls import GuardedCalls
from inference.guardrails.classifying import Classifying
from inference.guardrails.events import Whose
from inference.money.caller import Caller
from inference.money.meter import Meter, MeteredCalls
from inference.money.prices import price_of
from inference.neutral.calls import CacheResult, ModelCalls
from inference.routing.deployments import Route
from inference.routing.upstream import Allowance, RoutedCalls


def model_calls(
    caller: Caller,
    route: Route,
    config: Config,
    engine: CacheEngine,
    allowance: Allowance,
    meter: Meter,
    recorder: CallRecorder,
    *,
    agent: AgentConfig | None = None,
    control: CacheControl | None = None,
    answering: bool = False,
    classifying: Classifying | None = None,
) -> ModelCalls:
    """The calls of a conversation going to ``route``; through the response cache when
    ``agent`` (the one conversing) has one and ``control`` (what the request lets the
    cache do) is given; ``answering``: the conversation of the agent the client called;
    ``classifying``: who asks the judges of its guardrails."""
    calls: ModelCalls = RoutedCalls(route, config, engine, allowance, caller.span)
    first = route.deployments[0]
    price = price_of(config, first.provider, first.model)
    seat = SEAT.get()
    if seat is not None and answering and caller.purpose == "batch":
        calls = NativeCalls(calls, seat, first, price)
    cached: CacheResult | None = None
    if agent is not None and agent.cache is not None and control is not None:
        calls = CachedCalls(calls, agent, route, caller, control, config, engine)
        cached = "bypass" if control.bypassed else "miss"
    names = _guardrails(caller, agent)
    if names and agent is not None:
        whose = Whose(caller.user_id, caller.key_id, agent.name)
        outcomes = recorder.guardrails
        calls = GuardedCalls(
            calls, config, names, whose, engine.writer, outcomes, caller.span, classifying
        )
    calls = TracedCalls(calls, caller.span, cached, first.model)
    calls = RecordedCalls(calls, recorder, answering)
    return MeteredCalls(calls, meter, price)


def _guardrails(caller: Caller, agent: AgentConfig | None) -> tuple[str, ...]:
    """The guardrails of ``agent``'s calls: its own, then those of the caller's key (a
    guardrail's own calls go through none)."""
    if agent is None or caller.purpose == "guardrail":
        return ()
    names = [*agent.guardrails, *(caller.key.guardrails if caller.key is not None else ())]
    return tuple(dict.fromkeys(names))
