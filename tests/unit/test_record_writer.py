"""The record writer at shutdown: what requests still being answered hand over is written."""

import asyncio

import pytest

from core.afterresponse import response_scope
from inference.ledger.writer import RecordWriter

# The writer writes on the database threads, which check their connections first.
pytestmark = pytest.mark.django_db(transaction=True)


async def test_stop_writes_the_record_of_a_request_that_ends_after_it_was_called() -> None:
    writer = RecordWriter()
    written: list[str] = []
    started = asyncio.Event()

    async def request_still_answering() -> None:
        with response_scope():
            started.set()
            await asyncio.sleep(0.2)  # a stream the server is cancelling, recording as it ends
            writer.queue(written.extend, "late turn")

    answering = asyncio.create_task(request_still_answering())
    await started.wait()
    await writer.stop()

    assert written == ["late turn"]
    await answering


async def test_stop_gives_up_on_a_request_that_outlasts_the_drain() -> None:
    writer = RecordWriter()
    written: list[str] = []
    writer.queue(written.extend, "queued before")
    release = asyncio.Event()

    async def request_that_hangs() -> None:
        with response_scope():
            await release.wait()

    hanging = asyncio.create_task(request_that_hangs())
    await asyncio.sleep(0)
    await writer.stop(drain=0.05)

    assert written == ["queued before"]
    release.set()
    await hanging


async def test_deferred_records_are_gathered_and_written_together(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("inference.ledger.writer.DEFER_SECONDS", 0.1)
    writer = RecordWriter()
    batches: list[list[str]] = []
    for name in ("trace 1", "trace 2", "trace 3"):
        writer.defer(batches.append, name)
    await writer.write(batches.append, "a turn")  # not waiting for the deferred ones

    assert batches == [["a turn"]]
    await asyncio.sleep(0.3)
    assert batches == [["a turn"], ["trace 1", "trace 2", "trace 3"]]


async def test_stop_writes_the_deferred_records_at_once() -> None:
    writer = RecordWriter()
    written: list[str] = []
    writer.defer(written.extend, "trace")

    await writer.stop(drain=0.05)

    assert written == ["trace"]


async def test_a_failing_deferred_record_fails_alone(caplog: pytest.LogCaptureFixture) -> None:
    writer = RecordWriter()
    written: list[str] = []

    def picky(records: list[str]) -> None:
        if "bad" in records:
            raise ValueError("cannot write it")
        written.extend(records)

    writer.defer(picky, "bad")
    writer.defer(picky, "good")
    await writer.stop(drain=0.05)

    assert written == ["good"]
    assert "could not write a deferred record" in caplog.text
