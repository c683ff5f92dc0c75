"""What a model call is, for the cache: the SHA-256 of everything the upstream would be
sent (the system text with its preamble, recalled memories and language rule; the
messages with replayed history; tools, tool choice, reply format, sampling), of the
agent, of every provider and model its route may send it to, and of the scope (a user, a
key, or everyone). Change any of them and the call is another one.

``context`` is the same without the last user message's text: the calls a semantic
lookup compares by that text's embedding.
"""

import hashlib
import json
from dataclasses import dataclass, replace
from typing import Any

import orjson

from inference.neutral.types import ChatRequest, Message
from inference.routing.deployments import Route

_VERSION = "1"  # bumped when what goes into a key changes: older entries are never hit


@dataclass(frozen=True)
class CallKeys:
    key: str
    context: str
    question: str  # the last user message's text (what a semantic lookup embeds)


def call_keys(
    request: ChatRequest, agent: str, route: Route, scope: str, semantic: bool = False
) -> CallKeys:
    """The call's keys; its ``context`` only for a ``semantic`` cache (else the key)."""
    where = [_VERSION, agent, [[item.provider, item.model] for item in route], scope]
    index, question = _last_question(request.messages)
    asked = _digest([*where, request])
    if index is None or not semantic:
        return CallKeys(asked, asked, question)
    blanked = list(request.messages)
    blanked[index] = replace(blanked[index], content="", parts=())
    context = _digest([*where, replace(request, messages=tuple(blanked))])
    return CallKeys(asked, context, question)


def _last_question(messages: tuple[Message, ...]) -> tuple[int | None, str]:
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user":
            return index, messages[index].content
    return None, ""


def _digest(value: list[Any]) -> str:
    return hashlib.sha256(_canonical(value)).hexdigest()


def _canonical(value: Any) -> bytes:
    """JSON with sorted keys (dataclasses as their fields); the stdlib for what orjson
    refuses (integers beyond 64 bits, keys that are not strings)."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS)
    except TypeError:
        return json.dumps(value, sort_keys=True, default=_fields).encode()


def _fields(value: Any) -> Any:
    return getattr(value, "__dict__", repr(value))
