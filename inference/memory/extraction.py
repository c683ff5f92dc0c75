"""After a reply, in the background: the agent's ``memory.extractor`` picks the durable
facts of the exchange, and those the user's memories do not already hold are kept
(docs/memory.md). Nothing here reaches the user's request: failures are logged."""

import json
import logging
from dataclasses import dataclass
from typing import Any

from django.db import transaction
from django.utils import timezone

from agents.schema import AgentConfig, Config
from core.float32 import Vector
from inference.calls.asking import Billing, ask
from inference.database import in_database, lock_until_commit
from inference.engine import Engine
from inference.erasures import erasures_of
from inference.memory.recall import MEMORY_CHARGE_FAILED
from inference.memory.store import add_memories, memory_line, shelf
from inference.money.caller import Caller
from inference.money.settlement import charge, settle
from inference.neutral.types import ChatRequest, Message, ResponseFormat
from inference.routing.deployments import route_of
from inference.routing.embedding import embed
from inference.structured.exchange import quoted_exchange
from inference.structured.instruction import structured_output_instruction
from inference.telemetry.names import agent_span

logger = logging.getLogger("gateway.memory")
FACTS = ResponseFormat(
    kind="json_schema",
    name="facts",
    strict=True,
    schema={
        "type": "object",
        "properties": {"facts": {"type": "array", "items": {"type": "string"}}},
        "required": ["facts"],
        "additionalProperties": False,
    },
)
# What a reply may be: the object asked for, or a bare JSON array of strings, which models
# without structured output often answer (the reply is checked against this; providers
# with a native JSON mode are asked for FACTS).
FACTS_OR_LIST = ResponseFormat(
    kind="json_schema",
    name="facts",
    schema={"anyOf": [FACTS.schema, {"type": "array", "items": {"type": "string"}}]},
)
INSTRUCTION = (
    "You keep an assistant's long-term memory of one user. From the exchange below, list "
    "the durable facts about the user worth remembering in later conversations (who they "
    "are, what they work on, their preferences), each as one short sentence in the third "
    "person. Leave out what only matters to this exchange. No facts is a valid answer."
)


@dataclass(frozen=True)
class TurnToLearn:
    """The turn to learn from, and its caller (when the turn began: a user erased since
    is not learned about)."""

    completion_id: str
    caller: Caller
    agent: AgentConfig  # the agent whose memory it is
    user_text: str
    reply: str


async def extract_memories(exchange: TurnToLearn, config: Config, engine: Engine) -> None:
    try:
        await _extract(exchange, config, engine)
    except Exception:
        logger.exception(
            "memory extraction failed for %s (%s)", exchange.agent.name, exchange.completion_id
        )


async def _extract(exchange: TurnToLearn, config: Config, engine: Engine) -> None:
    memory = exchange.agent.memory
    assert memory is not None and memory.extractor is not None
    extractor = config.extractor(memory)
    embedder = config.embedder(memory.embedder)
    if extractor is None or embedder is None:
        return
    caller = exchange.caller.to("memory")
    billing = Billing(exchange.agent.name, exchange.completion_id)
    with agent_span(caller.span, extractor.name) as span:
        request = _request(extractor, exchange)
        asked = await ask(
            caller.traced(span),
            config,
            engine,
            route_of(extractor),
            request,
            billing,
            checked_against=FACTS_OR_LIST,
        )
    if asked.text is None:
        logger.error(
            "memory extraction failed for %s (%s): %s",
            exchange.agent.name,
            exchange.completion_id,
            asked.error,
        )
        return
    facts = _facts(asked.text)[: memory.max_facts]
    if not facts:
        return
    embedded = await embed(config, engine, embedder, facts, span=caller.span)
    cost = charge(
        caller,
        embedded.usage,
        agent=exchange.agent.name,
        call_id=exchange.completion_id,
        answered_by=embedded.answered_by,
    )
    engine.writer.queue(settle, cost).add_done_callback(MEMORY_CHARGE_FAILED)
    kept = await in_database(
        _keep_novel,
        exchange,
        embedder.name,
        list(zip(facts, embedded.vectors, strict=True)),
        memory.dedup,
    )
    logger.info("kept %d of %d facts for %s", kept, len(facts), exchange.agent.name)


def _request(extractor: AgentConfig, exchange: TurnToLearn) -> ChatRequest:
    system = "\n\n".join(
        part
        for part in (extractor.preamble, INSTRUCTION, structured_output_instruction(FACTS))
        if part.strip()
    )
    conversation = quoted_exchange(exchange.user_text, exchange.reply)
    return ChatRequest(
        model=extractor.model,
        system=system,
        messages=(Message(role="user", content=conversation),),
        response_format=FACTS,
    )


def _facts(text: str) -> list[str]:
    """The facts of ``{"facts": [...]}``, or of a bare JSON array of strings."""
    value: Any = json.loads(text)
    if isinstance(value, dict):
        value = value.get("facts")
    if not isinstance(value, list):
        return []
    lines = (memory_line(fact) for fact in value if isinstance(fact, str))
    return list(dict.fromkeys(line for line in lines if line is not None))


def _keep_novel(
    exchange: TurnToLearn, embedder: str, facts: list[tuple[str, Vector]], dedup: float
) -> int:
    """Store each fact less similar than ``dedup`` to every stored memory and to the facts
    kept before it; under a lock per user, so two extractions cannot both keep one fact."""
    with transaction.atomic():
        lock_until_commit(f"memory:{exchange.caller.user_id}")
        if erasures_of([exchange.caller.user_id]).since(
            exchange.caller.user_id, exchange.caller.started_at
        ):
            return 0
        held = shelf(exchange.caller.user_id, exchange.agent.name, embedder)
        novel: list[tuple[str, Vector]] = []
        for text, vector in facts:
            if held.most_similar(vector) >= dedup:
                continue
            if any(_cosine(vector, kept) >= dedup for _, kept in novel):
                continue
            novel.append((text, vector))
        add_memories(
            exchange.caller.user_id,
            exchange.agent.name,
            embedder,
            novel,
            exchange.completion_id,
            timezone.now(),
        )
    return len(novel)


def _cosine(first: Vector, second: Vector) -> float:
    import numpy as np

    norms = float(np.linalg.norm(first) * np.linalg.norm(second))
    return float(first @ second) / norms if norms else 0.0
