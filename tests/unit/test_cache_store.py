"""The response cache's parts below the server: what goes into a call's key, which
replies are kept, and how the table forgets (expiry, the least recently used beyond
``max_entries``, semantic lookups among one context only)."""

from dataclasses import replace
from datetime import timedelta

import pytest
from django.utils import timezone

from inference.cache.entries import Entry, dumps, loads, storable
from inference.cache.keys import call_keys
from inference.cache.store import NewEntry, find, housekeep, nearest, write
from inference.models import CachedReply
from inference.neutral.calls import Answerer
from inference.neutral.types import (
    ChatRequest,
    ChatResponse,
    Message,
    ResponseFormat,
    Sampling,
    ToolCall,
    Usage,
)
from inference.routing.deployments import Deployment, Route

ROUTE = Route((Deployment("openai", "gpt-1"),))
REQUEST = ChatRequest(
    model="gpt-1",
    system="You answer FAQs.",
    messages=(Message(role="user", content="Capital of France?"),),
)
REPLY = ChatResponse(
    text="Paris.",
    usage=Usage(11, 7, cost_micro_usd=25),
    tool_calls=(ToolCall("call_1", "lookup", '{"q": "x"}', "c2ln"),),
    response_model="gpt-1-0613",
)


def test_a_key_changes_with_every_part_of_the_call_and_nothing_else() -> None:
    key = call_keys(REQUEST, "faq", ROUTE, "user:ada").key
    others = [
        call_keys(replace(REQUEST, system="Other preamble."), "faq", ROUTE, "user:ada"),
        call_keys(REQUEST, "faq", ROUTE, "user:bob"),
        call_keys(REQUEST, "other", ROUTE, "user:ada"),
        call_keys(REQUEST, "faq", Route((Deployment("openai", "gpt-2"),)), "user:ada"),
        call_keys(replace(REQUEST, sampling=Sampling(temperature=0.2)), "faq", ROUTE, "user:ada"),
    ]

    assert call_keys(REQUEST, "faq", ROUTE, "user:ada").key == key
    assert len({key, *(keys.key for keys in others)}) == 6


def test_the_context_of_a_semantic_cache_leaves_out_the_last_question_only() -> None:
    asked = call_keys(REQUEST, "faq", ROUTE, "global", semantic=True)
    other_question = replace(REQUEST, messages=(Message(role="user", content="Bread?"),))
    other = call_keys(other_question, "faq", ROUTE, "global", semantic=True)
    other_preamble = call_keys(replace(REQUEST, system="Hi."), "faq", ROUTE, "global", True)

    assert asked.key != other.key
    assert asked.context == other.context != other_preamble.context
    assert (asked.question, other.question) == ("Capital of France?", "Bread?")
    assert call_keys(REQUEST, "faq", ROUTE, "global").context == asked.key  # exact: unused


def test_complete_replies_are_kept_and_others_are_not() -> None:
    schema = ResponseFormat("json_schema", {"type": "object", "required": ["city"]})
    structured = replace(REQUEST, response_format=schema)

    assert storable(REQUEST, REPLY)
    assert not storable(REQUEST, replace(REPLY, finish_reason="length"))
    assert not storable(REQUEST, replace(REPLY, finish_reason="content_filter"))
    assert not storable(replace(REQUEST, sampling=Sampling(logprobs=True)), REPLY)
    assert storable(structured, ChatResponse(text='```json\n{"city": "Paris"}\n```'))
    assert not storable(structured, ChatResponse(text='{"town": "Paris"}'))


def test_an_entry_comes_back_as_it_went_and_a_replay_spends_nothing() -> None:
    now = timezone.now()
    entry = Entry(REPLY, Answerer("openai", "gpt-1"), now)

    back = loads(dumps(entry))
    replayed = back.replayed()

    assert back == entry
    assert replayed.usage == Usage()
    assert replayed.tool_calls[0].id != "call_1" and replayed.tool_calls[0].id.startswith("call_")
    assert replayed.tool_calls[0].signature == "c2ln"


def _kept(question: str, ttl: int = 60, vector: tuple[float, ...] | None = None) -> NewEntry:
    request = replace(REQUEST, messages=(Message(role="user", content=question),))
    keys = call_keys(request, "faq", ROUTE, "user:ada", semantic=True)
    return NewEntry(keys, "faq", "ada", Entry(REPLY, None, timezone.now()), ttl, vector)


@pytest.mark.django_db
def test_the_least_recently_used_go_beyond_max_entries_and_the_expired_first() -> None:
    now = timezone.now()
    old, used, fresh, expired = (_kept(q) for q in ("old?", "used?", "fresh?", "expired?"))
    write([old, used], [], now - timedelta(minutes=3))
    write([fresh], [], now - timedelta(minutes=2))
    write([], [used.keys.key], now - timedelta(minutes=1))
    write([expired], [], now)
    CachedReply.objects.filter(key=expired.keys.key).update(expires_at=now)

    removed = housekeep(2, now)

    assert removed == 2
    kept = set(CachedReply.objects.values_list("key", flat=True))
    assert kept == {used.keys.key, fresh.keys.key}
    assert find(old.keys.key, now) is None
    found = find(fresh.keys.key, now)
    assert found is not None and found.entry.reply == REPLY


@pytest.mark.django_db
def test_a_semantic_lookup_finds_the_nearest_question_of_its_context_above_the_threshold() -> None:
    now = timezone.now()
    near = _kept("capital of France?", vector=(1.0, 0.1, 0.0))
    far = _kept("bread?", vector=(0.0, 0.0, 1.0))
    write([near, far], [], now)

    found = nearest(near.keys.context, (1.0, 0.0, 0.0), 0.9, now)

    assert found is not None and found.key == near.keys.key
    assert found.similarity == pytest.approx(0.995, abs=1e-3)
    assert nearest(near.keys.context, (0.0, 1.0, 0.0), 0.9, now) is None
    assert nearest("another context", (1.0, 0.1, 0.0), 0.5, now) is None
    assert nearest(near.keys.context, (1.0, 0.0), 0.5, now) is None  # another embedder's size
