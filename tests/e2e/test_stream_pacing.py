"""Streams as the upstream paces them (issue 46): a token-paced stream reaches the client
event by event, and events that arrive together (several in one read, or one split over
reads) reach it whole and in order. No clock is asserted: the order of what the fake sent
and what the client received is."""

import threading
import time

import openai
import pytest
from openai.types.chat import ChatCompletionChunk

from tests.fakes.base import Reply, sse
from tests.fakes.openai_upstream import OpenAIUpstream

WORDS = [f"w{index} " for index in range(36)]  # with the role, finish, usage, [DONE]: 40


def stream(client: openai.OpenAI, user_id: str) -> openai.Stream[ChatCompletionChunk]:
    return client.chat.completions.create(
        model="openai-agent",
        messages=[{"role": "user", "content": "count for me"}],
        safety_identifier=user_id,
        stream=True,
        stream_options={"include_usage": True},
    )


def test_a_token_paced_stream_reaches_the_client_event_by_event(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str
) -> None:
    # The fake sends the role and the first word, one write each, then holds the rest until
    # the client has that word: were the stream buffered anywhere, it would wait in vain.
    release = threading.Event()
    openai_fake.script(
        Reply.of_chunks(*WORDS, chunk_delay=0.005, hold_after_chunks=2, release=release)
    )
    first_word_at: float | None = None
    words = []
    for chunk in stream(client, user_id):
        if chunk.choices and chunk.choices[0].delta.content:
            if first_word_at is None:
                first_word_at = time.monotonic()
                release.set()
            words.append(chunk.choices[0].delta.content)
    recorded = openai_fake.last
    assert recorded.released, "the first word did not reach the client before the rest was sent"
    assert [events for events, _ in recorded.sent] == list(range(1, 41))  # a write per event
    assert first_word_at is not None and first_word_at < recorded.sent[-1][1]
    assert words == WORDS


def split_stream(size: int) -> tuple[bytes, ...]:
    """A whole OpenAI stream of WORDS cut every ``size`` bytes, events split mid-way."""
    envelope = {"id": "chatcmpl-split", "object": "chat.completion.chunk", "created": 1}
    envelope["model"] = "openai-model-1"

    def chunk(delta: dict[str, str], finish: str | None = None) -> bytes:
        return sse({**envelope, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    usage = {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18}
    whole = b"".join(
        [
            chunk({"role": "assistant", "content": ""}),
            *(chunk({"content": word}) for word in WORDS),
            chunk({}, "stop"),
            sse({**envelope, "choices": [], "usage": usage}),
            sse("[DONE]"),
        ]
    )
    return tuple(whole[start : start + size] for start in range(0, len(whole), size))


@pytest.mark.parametrize(
    "reply",
    [
        Reply.of_chunks(*WORDS, events_per_write=0),
        Reply.of_chunks(*WORDS, events_per_write=3),
        Reply(text="".join(WORDS), raw_frames=split_stream(7), chunk_delay=0.001),
    ],
    ids=["all-events-in-one-write", "three-events-per-write", "events-split-every-7-bytes"],
)
def test_events_read_together_reach_the_client_whole_and_in_order(
    client: openai.OpenAI, openai_fake: OpenAIUpstream, user_id: str, reply: Reply
) -> None:
    openai_fake.script(reply)
    chunks = list(stream(client, user_id))
    deltas = [chunk.choices[0].delta for chunk in chunks if chunk.choices]
    assert deltas[0].role == "assistant"
    assert [delta.content for delta in deltas if delta.content] == WORDS
    finishes = [chunk.choices[0].finish_reason for chunk in chunks if chunk.choices]
    assert [finish for finish in finishes if finish] == ["stop"]
    assert finishes[-1] == "stop"
    assert chunks[-1].usage is not None and chunks[-1].usage.completion_tokens == 7
    writes = [events for events, _ in openai_fake.last.sent]
    if reply.events_per_write == 0:
        assert writes == [40]
    elif not reply.raw_frames:
        assert writes == [*range(3, 40, 3), 40]
