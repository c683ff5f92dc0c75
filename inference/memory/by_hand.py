"""A memory an operator adds by hand (the admin's ``POST /admin/memories``): embedded
before it is stored, so the user's next request can recall it."""

import uuid

from django.utils import timezone

from agents.schema import Config
from inference.database import in_database
from inference.engine import Engine
from inference.memory.embedding import embed, embedding_charge
from inference.memory.recall import logged_failure
from inference.memory.store import add_memories
from inference.models import Memory
from inference.money.settlement import settle
from inference.providers.base import ProviderError


class CannotRemember(ValueError):
    """The agent does not exist or keeps no memory."""


class EmbeddingFailed(RuntimeError):
    """The embedder's provider failed: nothing was stored."""


async def add_by_hand(
    config: Config, engine: Engine, user_id: str, agent_name: str, text: str
) -> Memory:
    """Store ``text`` as a memory of ``agent_name`` about ``user_id``."""
    agent = config.agent(agent_name)
    if agent is None or agent.memory is None:
        raise CannotRemember(f"agent '{agent_name}' does not exist or has no memory section")
    embedder = config.embedder(agent.memory.embedder)
    if embedder is None:
        raise CannotRemember(f"embedder '{agent.memory.embedder}' is not defined")
    try:
        embedded = await embed(config, engine, embedder, [text])
    except ProviderError as error:
        raise EmbeddingFailed(error.message) from error
    now = timezone.now()
    charge = embedding_charge(
        user_id, agent.name, embedder, embedded.usage, f"memory-{uuid.uuid4().hex}"
    )
    engine.writer.queue(settle, charge).add_done_callback(logged_failure)
    (stored,) = await in_database(
        add_memories, user_id, agent.name, embedder.name, [(text, embedded.vectors[0])], "", now
    )
    return stored
