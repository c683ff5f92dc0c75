"""One candidate's answer to one case, made as a turn would make it.

The request is built by the turn's own builder (``agent_call``): the candidate's
preamble, its skills and tools, then the case's history and its question. Memory is
neither recalled nor extracted, and nothing is stored. The call goes through the
conversation's tool loop (routing, retries, fallbacks, the candidate's own tools run as in
a turn); the response cache is never used, so every reply is fresh.

What the recorded turn's client sent beside its last message (its own system messages,
tools, sampling, ``response_format``) is not stored, so a replay has none of it.
"""

from collections.abc import Awaitable, Callable

from agents.schema import AgentConfig, Config
from inference.calls.asking import Asked, Billing
from inference.engine import Engine
from inference.evaluations.cases import RecordedCase
from inference.money.caller import Caller
from inference.neutral.request import ClientRequest
from inference.neutral.types import Message
from inference.turn.options import RequestOptions
from inference.turn.preparation import Setting, ask_agent


async def replay(
    agent: AgentConfig,
    case: RecordedCase,
    caller: Caller,
    billing: Billing,
    config: Config,
    engine: Engine,
    going_on: Callable[[], Awaitable[None]],
) -> Asked:
    """``agent``'s reply to ``case``; ``caller``: the case's user (the candidate's tools
    act as they would for that user), its calls charged as ``billing`` says."""
    client = ClientRequest(
        model=agent.name, system=(), messages=(Message(role="user", content=case.question),)
    )
    setting = Setting(client, RequestOptions(), case.history, {})
    return await ask_agent(agent, setting, caller, billing, config, engine, going_on)
