"""Keeping the gateway's own half of a tool round for the client's follow-up.

When a round calls client tools and agent tools together, the client only sees its own
calls. The agent's calls and their results (and what the provider needs back with the
round: its opaque reasoning, such as Anthropic's signed thinking, and its signatures of
the client's calls, such as Gemini's, which the OpenAI shape has no place for) are
stored under each returned call id for an hour; when the follow-up carries those ids,
they are put back in the conversation before the client's results, so the model sees
the whole round again. Any process can resume it; without it (expired) the follow-up
still works, the model just misses that part of the round. Synchronous ORM code, run
inside the pipeline's batched calls.
"""

from dataclasses import replace
from datetime import datetime, timedelta
from typing import Any

from inference.models import ToolExchange
from inference.neutral.types import Message, ToolCall
from inference.tools.loop import Exchange

KEPT_FOR = timedelta(hours=1)


def tool_exchange_rows(
    user_id: str, client_call_ids: list[str], exchange: Exchange
) -> list[ToolExchange]:
    stored = {
        "calls": [
            {"id": c.id, "name": c.name, "arguments": c.arguments, "signature": c.signature}
            for c in exchange.calls
        ],
        "results": [
            {"tool_call_id": m.tool_call_id, "name": m.name, "content": m.content}
            for m in exchange.results
        ],
        "reasoning": list(exchange.reasoning),
        "signatures": dict(exchange.signatures),
    }
    return [
        ToolExchange(call_id=call_id, user_id=user_id, exchange=stored)
        for call_id in client_call_ids
    ]


def load_exchanges(user_id: str, call_ids: list[str], now: datetime) -> dict[str, Exchange]:
    """The stored exchanges of these call ids (those not expired), by call id."""
    if not call_ids:
        return {}
    rows = ToolExchange.objects.filter(
        user_id=user_id, call_id__in=call_ids, created_at__gt=now - KEPT_FOR
    ).values_list("call_id", "exchange")
    return {call_id: _exchange(stored) for call_id, stored in rows}


def delete_expired(now: datetime) -> int:
    return ToolExchange.objects.filter(created_at__lte=now - KEPT_FOR).delete()[0]


def with_exchanges(messages: tuple[Message, ...], stored: dict[str, Exchange]) -> list[Message]:
    """``messages`` with each stored exchange put back into the round it came from."""
    restored: list[Message] = []
    for message in messages:
        found = next((stored[c.id] for c in message.tool_calls if c.id in stored), None)
        if found is None:
            restored.append(message)
            continue
        signatures = dict(found.signatures)
        client_calls = tuple(
            replace(call, signature=signatures.get(call.id, call.signature))
            for call in message.tool_calls
        )
        restored.append(
            replace(
                message,
                tool_calls=(*found.calls, *client_calls),
                reasoning=found.reasoning or message.reasoning,
            )
        )
        restored.extend(found.results)
    return restored


def _exchange(stored: dict[str, Any]) -> Exchange:
    return Exchange(
        calls=tuple(
            ToolCall(id=c["id"], name=c["name"], arguments=c["arguments"], signature=c["signature"])
            for c in stored["calls"]
        ),
        results=tuple(
            Message(
                role="tool", content=r["content"], tool_call_id=r["tool_call_id"], name=r["name"]
            )
            for r in stored["results"]
        ),
        reasoning=tuple(stored.get("reasoning", ())),
        signatures=tuple(stored.get("signatures", {}).items()),
    )
