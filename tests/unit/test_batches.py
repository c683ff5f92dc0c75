"""Batches below the server: an input's checks (``inference.batches.validation``), the
lines' files and results (``inference.batches.results``), the claims that keep a line
from being sent twice (``inference.batches.records``), and what a refused line becomes
(``inference.batches.lines``)."""

import asyncio
import json
from datetime import UTC, datetime, timedelta

import pytest

from agents.loader import load_config_data
from inference.batches import records
from inference.batches.lines import RateLimited, run_line
from inference.batches.results import anthropic_results, output_lines
from inference.batches.validation import check_requests, read_jsonl
from inference.engine import Engine
from inference.models import Batch, BatchLine
from inference.neutral.errors import ApiError
from inference.serving.batchline import BatchLines, LineCaller
from inference.serving.errors import openai_error

NOW = datetime(2026, 11, 28, 12, 0, tzinfo=UTC)
CHAT = "/v1/chat/completions"
CONFIG = load_config_data(
    {
        "providers": {"openai": {"api_key": "k"}},
        "agents": [{"name": "assistant", "provider": "openai", "model": "m"}],
        "embedders": [{"name": "embedder", "provider": "openai", "model": "e"}],
        "aliases": {"gpt-*": "assistant"},
        "batches": {"max_requests": 3},
    }
)


def line(custom_id: str, model: str = "assistant", url: str = CHAT) -> bytes:
    body = {"model": model, "messages": [{"role": "user", "content": "hi"}]}
    return json.dumps({"custom_id": custom_id, "method": "POST", "url": url, "body": body}).encode()


def test_a_valid_input_keeps_each_request_with_its_line_and_skips_blank_lines() -> None:
    data = b"\n".join([line("a"), b"", line("b", model="gpt-4o")]) + b"\n"

    checked = check_requests(read_jsonl(data), CHAT, False, CONFIG)

    assert checked.problems == []
    assert [(r.number, r.custom_id, r.body["model"]) for r in checked.requests] == [
        (1, "a", "assistant"),
        (3, "b", "gpt-4o"),
    ]


def test_each_bad_line_is_named_and_a_duplicate_by_its_later_line() -> None:
    data = b"\n".join([line("a"), line("a"), line("c", model="embedder")])

    problems = check_requests(read_jsonl(data), CHAT, False, CONFIG).problems

    assert [(p.line, p.code) for p in problems] == [
        (2, "duplicate_custom_id"),
        (3, "model_not_found"),
    ]


def test_an_embeddings_batch_takes_embedders_only() -> None:
    url = "/v1/embeddings"
    data = b"\n".join([line("a", model="embedder", url=url), line("b", url=url)])

    problems = check_requests(read_jsonl(data), url, True, CONFIG).problems

    assert [(p.line, p.code) for p in problems] == [(2, "model_not_found")]


def test_more_lines_than_max_requests_fail_at_the_first_one_over() -> None:
    data = b"\n".join(line(f"r{n}") for n in range(5))

    problems = check_requests(read_jsonl(data), CHAT, False, CONFIG).problems

    assert [(p.line, p.code) for p in problems] == [(4, "too_many_requests")]


def test_an_empty_input_fails() -> None:
    problems = check_requests(read_jsonl(b"\n\n"), CHAT, False, CONFIG).problems

    assert [p.code for p in problems] == ["empty_file"]


def ended_line(number: int, status: str, **fields: object) -> BatchLine:
    return BatchLine(
        pk=number, number=number, custom_id=f"r{number}", body={}, status=status, **fields
    )


def test_output_and_error_files_split_the_ended_lines() -> None:
    lines = [
        ended_line(1, "succeeded", status_code=200, request_id="q1", response={"id": "c1"}),
        ended_line(
            2,
            "failed",
            status_code=403,
            request_id="q2",
            response={"error": {"message": "no"}},
            error_code="model_not_allowed",
            error_message="no",
        ),
        ended_line(3, "cancelled"),
    ]

    output, errors = output_lines(lines)

    assert [json.loads(text) for text in output.splitlines()] == [
        {
            "id": "batch_req_1",
            "custom_id": "r1",
            "response": {"status_code": 200, "request_id": "q1", "body": {"id": "c1"}},
            "error": None,
        }
    ]
    failed, cancelled = [json.loads(text) for text in errors.splitlines()]
    assert failed["response"]["status_code"] == 403
    assert failed["error"] == {"code": "model_not_allowed", "message": "no"}
    assert cancelled["response"] is None and cancelled["error"]["code"] == "batch_cancelled"


def test_anthropic_results_name_each_outcome() -> None:
    error = {"type": "error", "error": {"type": "permission_error", "message": "no"}}
    lines = [
        ended_line(1, "succeeded", response={"type": "message"}),
        ended_line(2, "failed", response=error),
        ended_line(3, "cancelled"),
        ended_line(4, "expired"),
    ]

    results = [json.loads(text) for text in anthropic_results(lines).splitlines()]

    assert results == [
        {"custom_id": "r1", "result": {"type": "succeeded", "message": {"type": "message"}}},
        {"custom_id": "r2", "result": {"type": "errored", "error": error}},
        {"custom_id": "r3", "result": {"type": "canceled"}},
        {"custom_id": "r4", "result": {"type": "expired"}},
    ]


def stored_batch(lines: int) -> Batch:
    batch = Batch.objects.create(
        id="batch_test",
        user_id="u",
        endpoint=CHAT,
        status="in_progress",
        expires_at=NOW + timedelta(days=1),
    )
    BatchLine.objects.bulk_create(
        BatchLine(batch=batch, number=n, custom_id=f"r{n}", body={}) for n in range(1, lines + 1)
    )
    return batch


@pytest.mark.django_db
def test_lines_are_claimed_in_order_and_none_once_the_batch_is_cancelled() -> None:
    batch = stored_batch(3)

    first = records.claim_lines(batch.id, 2)
    records.cancel_batch("u", batch.id, "openai", NOW)
    after_cancel = records.claim_lines(batch.id, 2)

    assert [claimed.number for claimed in first] == [1, 2]
    assert after_cancel == []
    assert BatchLine.objects.get(batch=batch, number=3).status == "queued"


@pytest.mark.django_db
def test_a_batch_whose_runner_died_is_taken_once_and_its_claimed_lines_fail() -> None:
    batch = stored_batch(3)
    [taken] = records.take_batches(5, NOW, lease=30)
    records.claim_lines(batch.id, 2)

    while_alive = records.take_batches(5, NOW + timedelta(seconds=10), lease=30)
    [taken_over] = records.take_batches(5, NOW + timedelta(seconds=31), lease=30)
    again = records.take_batches(5, NOW + timedelta(seconds=31), lease=30)

    assert taken.id == taken_over.id == batch.id
    assert while_alive == [] and again == []
    statuses = dict(BatchLine.objects.filter(batch=batch).values_list("number", "status"))
    assert statuses == {1: "failed", 2: "failed", 3: "queued"}
    assert set(BatchLine.objects.filter(status="failed").values_list("error_code", flat=True)) == {
        "interrupted"
    }


def refusing(error: ApiError) -> BatchLines:
    """A dialect whose every line is refused with ``error``."""

    async def answer(*_: object) -> dict[str, object]:
        raise error

    return BatchLines(CHAT, answer, openai_error)


def test_a_line_refused_for_its_rate_is_sent_again_after_the_wait() -> None:
    limited = ApiError(429, "rpm", code="rate_limit_exceeded", headers={"Retry-After": "7"})

    with pytest.raises(RateLimited) as waiting:
        asyncio.run(run_line(refusing(limited), {}, LineCaller("u", None), CONFIG, Engine()))

    assert waiting.value.wait == 7.0


def test_a_line_refused_for_a_spent_budget_fails_in_its_dialects_shape() -> None:
    spent = ApiError(429, "The API key's budget is spent", code="insufficient_quota")

    outcome = asyncio.run(run_line(refusing(spent), {}, LineCaller("u", None), CONFIG, Engine()))

    assert not outcome.succeeded and outcome.status_code == 429
    assert (outcome.error_code, outcome.error_message) == (
        "insufficient_quota",
        "The API key's budget is spent",
    )
    assert outcome.body["error"]["code"] == "insufficient_quota"
