"""A turn in process: prepared and run by the real turn code, through the real
OpenAI-format provider module against the fake OpenAI upstream, recording into the test
database (the record writer works on the database threads, hence committed transactions)."""

from collections.abc import AsyncIterator
from typing import Any

import pytest
from asgiref.sync import sync_to_async

from agents.loader import load_config_data
from agents.schema import Config
from core.requestlog import RequestLog
from inference.dialects.chat.body import ChatCompletionIn
from inference.dialects.chat.reader import from_chat_completion
from inference.engine import Engine
from inference.models import BudgetReservation, LedgerEntry, StoredMessage
from inference.neutral.errors import ApiError
from inference.neutral.types import TextDelta
from inference.turn.preparation import prepare_turn
from inference.turn.runner import TurnRunner
from tests.fakes.base import Reply
from tests.fakes.openai_upstream import OpenAIUpstream
from tests.upstreams import fake_base_url

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.fixture
def config(openai_fake: OpenAIUpstream) -> Config:
    return load_config_data(
        {
            "providers": {
                "openai": {
                    "api_key": "k",
                    "base_url": fake_base_url(openai_fake),
                    "retries": {"attempts": 0},
                }
            },
            "agents": [
                {"name": "support", "provider": "openai", "model": "gpt-test", "preamble": "Help."}
            ],
        }
    )


@pytest.fixture
async def engine(config: Config) -> AsyncIterator[Engine]:
    engine = Engine()
    await engine.start(config)
    yield engine
    await engine.stop()


async def run(
    config: Config, engine: Engine, text: str, stream: bool = False, **metadata: str
) -> Any:
    body = ChatCompletionIn(
        model="support",
        messages=[{"role": "user", "content": text}],
        safety_identifier="ada",
        metadata=metadata or None,
        stream=stream,
    )
    log = RequestLog(request_id="r", method="POST", path="/v1/chat/completions")
    turn = await prepare_turn(from_chat_completion(body), config, engine, log)
    runner = TurnRunner(config, engine, log)
    if not stream:
        return (await runner.complete(turn)).answer
    streamed = await runner.open_stream(turn)
    batches = [streamed.first, *[batch async for batch in streamed.events]]
    return [event.text for batch in batches for event in batch if isinstance(event, TextDelta)]


def rows(model: Any, **filters: Any) -> Any:
    return sync_to_async(lambda: list(model.objects.filter(**filters).values()))()


async def test_a_turn_is_answered_billed_and_remembered(
    config: Config, engine: Engine, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(Reply.of_text("Hello Ada."))

    answer = await run(config, engine, "Hi, I am Ada.")
    await engine.writer.stop()

    assert answer.text == "Hello Ada."
    (entry,) = await rows(LedgerEntry, user_id="ada")
    assert (entry["agent"], entry["provider"], entry["total_tokens"]) == ("support", "openai", 18)
    stored = await rows(StoredMessage, user_id="ada")
    assert [(m["role"], m["content"]) for m in stored] == [
        ("user", "Hi, I am Ada."),
        ("assistant", "Hello Ada."),
    ]
    sent = openai_fake.last.body["messages"]
    assert sent[0] == {"role": "system", "content": "Help."}


async def test_the_next_turn_replays_the_stored_history(
    config: Config, engine: Engine, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(Reply.of_text("Noted."), Reply.of_text("You are Ada."))
    await run(config, engine, "I am Ada.")
    await run(config, engine, "Who am I?")

    sent = [(m["role"], m["content"]) for m in openai_fake.last.body["messages"][1:]]
    assert sent == [("user", "I am Ada."), ("assistant", "Noted."), ("user", "Who am I?")]


async def test_a_stateless_turn_is_billed_but_not_remembered(
    config: Config, engine: Engine, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(Reply.of_text("Hi."))

    await run(config, engine, "Hello", history="off")
    await engine.writer.stop()

    assert len(await rows(LedgerEntry, user_id="ada")) == 1
    assert await rows(StoredMessage, user_id="ada") == []


async def test_a_streamed_turn_is_recorded_like_a_whole_one(
    config: Config, engine: Engine, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(Reply.of_chunks("Hel", "lo."))

    pieces = await run(config, engine, "Hi", stream=True)
    await engine.writer.stop()

    assert pieces == ["Hel", "lo."]
    stored = await rows(StoredMessage, user_id="ada", role="assistant")
    assert [m["content"] for m in stored] == ["Hello."]
    assert [e["total_tokens"] for e in await rows(LedgerEntry, user_id="ada")] == [18]


async def test_a_user_over_the_cap_is_refused_before_the_model_is_called(
    config: Config, engine: Engine, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(Reply.of_text("First."))
    await run(config, engine, "One", tokens_per_day="18")
    await engine.writer.stop()
    calls = len(openai_fake.requests)

    with pytest.raises(ApiError) as refused:
        await run(config, engine, "Two", tokens_per_day="18")

    assert (refused.value.status, refused.value.code) == (429, "rate_limit_exceeded")
    assert len(openai_fake.requests) == calls
    assert await rows(BudgetReservation, user_id="ada") == []


async def test_an_upstream_failure_frees_the_reservation_and_stores_no_reply(
    config: Config, engine: Engine, openai_fake: OpenAIUpstream
) -> None:
    openai_fake.script(Reply.of_error(500, {"error": {"message": "boom"}}))

    with pytest.raises(ApiError) as failed:
        await run(config, engine, "Hi", tokens_per_day="1000")
    await engine.writer.stop()

    assert failed.value.status == 502
    assert await rows(BudgetReservation, user_id="ada") == []
    assert await rows(StoredMessage, user_id="ada") == []
