"""One candidate's answer to one case, made as a turn would make it.

The request is built by the turn's own builder (``agent_call``): the candidate's
preamble, its skills and tools, then the case's history and its question. Memory is
neither recalled nor extracted, and nothing is stored. The call goes through the
conversation's tool loop (routing, retries, fallbacks, the candidate's own tools run as in
a turn); the response cache is never used, so every reply is fresh.

What the recorded turn's client sent beside its last message (its own system messages,
tools, sampling, ``response_format``) is not stored, so a replay has none of it.
"""

import time
from dataclasses import dataclass

from agents.schema import AgentConfig
from inference.engine import Engine
from inference.evaluations.cases import RecordedCase
from inference.neutral.calls import Answerer
from inference.neutral.errors import ApiError
from inference.neutral.request import ClientRequest
from inference.neutral.types import Message, Usage
from inference.providers.base import ProviderError
from inference.tools.executor import CallContext, tool_loop
from inference.turn.options import RequestOptions
from inference.turn.preparation import Setting, agent_call


@dataclass(frozen=True)
class Spoken:
    """What one conversation with a model said and spent (a candidate's or a judge's)."""

    text: str | None  # None: it failed
    error: str
    usage: Usage  # priced; a failure's too (what it had spent)
    answered_by: Answerer | None
    latency_ms: float


async def replay(
    agent: AgentConfig, case: RecordedCase, context: CallContext, engine: Engine
) -> Spoken:
    """``agent``'s reply to ``case``; ``context``: the conversation's (its user is the
    case's, so the candidate's tools act as they would for that user)."""
    client = ClientRequest(
        model=agent.name, system=(), messages=(Message(role="user", content=case.question),)
    )
    setting = Setting(client, RequestOptions(), case.history, {})
    started = time.perf_counter()
    try:
        call = await agent_call(
            agent, setting, user_id=context.user_id, config=context.config, engine=engine
        )
    except ApiError as error:  # its tools cannot be gathered (an MCP server is down)
        return Spoken(None, error.message, Usage(), None, elapsed_ms(started))
    loop = tool_loop(context, call.route, call.toolbox, call.request.response_format)
    try:
        answer = await loop.complete(call.request)
    except ProviderError as error:
        return Spoken(
            None, error.message, error.usage, loop.outcome.answered_by, elapsed_ms(started)
        )
    return Spoken(answer.text, "", answer.usage, loop.outcome.answered_by, elapsed_ms(started))


def elapsed_ms(started: float) -> float:
    """Milliseconds since ``started`` (a ``time.perf_counter()``)."""
    return (time.perf_counter() - started) * 1000
