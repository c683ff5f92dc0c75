"""The spans the gateway opens, by what they stand for: the only place their names are
spelled (the GenAI conventions' ``invoke_agent <agent>``, ``execute_tool <tool>``,
``<operation> <model>``; ours: ``<method> <path>`` for a request, ``RUN <what>`` for work
no client asked for). Code elsewhere asks for a span of a kind, never names one."""

from collections.abc import Callable, Mapping

from inference.telemetry.spans import Attributes, RequestTrace, Span
from inference.telemetry.tracing import TRACING


def request_span(
    method: str,
    path: str,
    headers: Mapping[str, str],
    attributes: Attributes,
    done: Callable[[RequestTrace], None],
) -> Span:
    """A ``/v1`` request's server span (the root of its trace)."""
    return TRACING.begin(f"{method} {path}", headers, attributes, done)


def run_span(what: str, done: Callable[[RequestTrace], None]) -> Span:
    """The root span of a turn no client asked for (``trigger:<name>``, ``task:<id>``)."""
    return TRACING.begin(f"RUN {what}", {}, {}, done)


def agent_trace(agent: str, attributes: Attributes) -> Span:
    """A conversation traced on its own (an evaluation's), exported when it ends."""
    return TRACING.begin(f"invoke_agent {agent}", {}, attributes, TRACING.export)


def agent_span(parent: Span, agent: str) -> Span:
    """One agent's conversation (a turn, a subagent, a judge, a shadow, an extractor)."""
    return parent.child(f"invoke_agent {agent}")


def tool_span(parent: Span, tool: str) -> Span:
    """One of the agent's own tools run by the gateway."""
    return parent.child(f"execute_tool {tool}")


def guardrail_span(parent: Span, guardrail: str) -> Span:
    """One guardrail's check of a call's input or output."""
    return parent.child(f"guardrail {guardrail}")


def model_span(parent: Span, operation: str, model: str) -> Span:
    """One upstream attempt (``chat``, ``embeddings``), or a call the cache answered."""
    return parent.child(f"{operation} {model}", "client")
