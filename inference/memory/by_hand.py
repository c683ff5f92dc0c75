"""A memory an operator adds by hand (the admin's ``POST /admin/memories``): embedded
before it is stored, so the user's next request can recall it."""

import uuid

from django.utils import timezone

from agents.schema import Config
from inference.database import in_database
from inference.engine import Engine
from inference.memory.recall import MEMORY_CHARGE_FAILED
from inference.memory.store import MAX_MEMORY_CHARACTERS, add_memories, memory_line
from inference.models import Memory
from inference.money.caller import Caller
from inference.money.settlement import charge, settle
from inference.providers.base import ProviderError
from inference.routing.embedding import embed


class CannotRemember(ValueError):
    """The agent does not exist or keeps no memory, or the text is no memory: ``field``
    says which."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(message)
        self.field = field


class EmbeddingFailed(RuntimeError):
    """The embedder's provider failed: nothing was stored."""


async def add_by_hand(
    config: Config, engine: Engine, user_id: str, agent_name: str, text: str
) -> Memory:
    """Store ``text`` (as one line: ``memory_line``) as a memory of ``agent_name`` about
    ``user_id``."""
    line = memory_line(text)
    if line is None:
        raise CannotRemember(
            "text", f"a memory is one line of 1 to {MAX_MEMORY_CHARACTERS} characters of text"
        )
    agent = config.agent(agent_name)
    if agent is None or agent.memory is None:
        raise CannotRemember(
            "agent", f"agent '{agent_name}' does not exist or has no memory section"
        )
    embedder = config.embedder(agent.memory.embedder)
    if embedder is None:
        raise CannotRemember("agent", f"embedder '{agent.memory.embedder}' is not defined")
    try:
        embedded = await embed(config, engine, embedder, [line])
    except ProviderError as error:
        raise EmbeddingFailed(error.message) from error
    now = timezone.now()
    cost = charge(
        Caller(user_id, purpose="memory", started_at=now),
        embedded.usage,
        agent=agent.name,
        call_id=f"memory-{uuid.uuid4().hex}",
        answered_by=embedded.answered_by,
    )
    engine.writer.queue(settle, cost).add_done_callback(MEMORY_CHARGE_FAILED)
    (stored,) = await in_database(
        add_memories, user_id, agent.name, embedder.name, [(line, embedded.vectors[0])], "", now
    )
    return stored
