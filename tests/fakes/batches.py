"""The providers' batch APIs, for the fakes: OpenAI's Files and Batch APIs and Anthropic's
Message Batches, in their wire shapes.

A batch's lines are answered when it is created, each as the fake answers a call (its
rules, then its script, then its default reply), and recorded in the batch (not in the
fake's ``requests``, which hold the batch API's own calls). It is ``in_progress`` for
``batch_polls`` polls of it, then ended with its results; a cancelled one ends at its
next poll, having run none of its lines.
"""

import email.parser
import email.policy
import itertools
import json
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from tests.fakes.base import Recorded, Reply

if TYPE_CHECKING:
    from tests.fakes.base import FakeUpstream

_ids = itertools.count(1)


@dataclass
class FakeBatch:
    id: str
    requests: list[tuple[str, dict[str, Any]]]  # (custom_id, body), as sent
    answers: list[tuple[str, Reply, Recorded]]  # (custom_id, reply, the line as a call)
    polls_left: int
    status: str = "in_progress"  # then cancelling, ended (completed) or cancelled
    created_at: int = field(default_factory=lambda: int(time.time()))


class BatchStore:
    """The batches and files of one fake (``batches``: by id, in the order created)."""

    def __init__(self, fake: "FakeUpstream") -> None:
        self.fake = fake
        self.batches: dict[str, FakeBatch] = {}
        self.files: dict[str, bytes] = {}
        self.polls = 0  # polls of a batch before it ends

    def reset(self) -> None:
        self.batches.clear()
        self.files.clear()
        self.polls = 0

    def create(
        self, prefix: str, path: str, requests: list[tuple[str, dict[str, Any]]]
    ) -> FakeBatch:
        """Called under the fake's lock (from ``fixed_reply``)."""
        answers = []
        for custom_id, body in requests:
            line = Recorded(method="POST", path=path, query={}, headers={}, body=body)
            answers.append((custom_id, self.fake.line_reply(line), line))
        batch = FakeBatch(f"{prefix}{next(_ids)}", requests, answers, self.polls)
        self.batches[batch.id] = batch
        return batch

    def polled(self, batch: FakeBatch) -> None:
        if batch.status == "cancelling":
            batch.status = "cancelled"
        elif batch.status == "in_progress":
            if batch.polls_left <= 0:
                batch.status = "ended"
            batch.polls_left -= 1

    def cancel(self, batch: FakeBatch) -> None:
        if batch.status == "in_progress":
            batch.status = "cancelling"

    def file(self, data: bytes) -> str:
        file_id = f"file-fake{next(_ids)}"
        self.files[file_id] = data
        return file_id


def _jsonl(rows: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(row) + "\n" for row in rows).encode()


def openai_batch_reply(store: BatchStore, recorded: Recorded) -> Reply | None:
    """``POST /v1/files``, ``GET /v1/files/{id}/content``, ``POST /v1/batches``, ``GET
    /v1/batches/{id}``, ``POST /v1/batches/{id}/cancel`` (None: another call)."""
    parts = recorded.path.strip("/").split("/")
    if parts[:2] == ["v1", "files"]:
        if recorded.method == "POST" and len(parts) == 2:
            data, purpose = _multipart(recorded)
            file_id = store.file(data)
            return Reply(
                raw_body={"id": file_id, "object": "file", "purpose": purpose, "bytes": len(data)}
            )
        if len(parts) == 4 and parts[3] == "content" and parts[2] in store.files:
            return Reply(raw_body=store.files[parts[2]])
        return Reply.of_error(404, "No such file")
    if parts[:2] != ["v1", "batches"]:
        return None
    if recorded.method == "POST" and len(parts) == 2:
        source = store.files[recorded.body["input_file_id"]].decode()
        lines = [json.loads(line) for line in source.splitlines() if line.strip()]
        created = store.create(
            "batch_fake",
            recorded.body["endpoint"],
            [(line["custom_id"], line["body"]) for line in lines],
        )
        return Reply(raw_body=_openai_batch(store, created))
    batch: FakeBatch | None = store.batches.get(parts[2]) if len(parts) >= 3 else None
    if batch is None:
        return Reply.of_error(404, "No such batch")
    if len(parts) == 4 and parts[3] == "cancel":
        store.cancel(batch)
    else:
        store.polled(batch)
    return Reply(raw_body=_openai_batch(store, batch))


def _openai_batch(store: BatchStore, batch: FakeBatch) -> dict[str, Any]:
    status = {"ended": "completed"}.get(batch.status, batch.status)
    output_file_id = error_file_id = None
    if status == "completed":
        output, errors = [], []
        for number, (custom_id, reply, line) in enumerate(batch.answers):
            if reply.status >= 400:
                body = store.fake.render_error(reply)
                error = body.get("error") or {}
                errors.append(
                    {
                        "id": f"batch_req_{number}",
                        "custom_id": custom_id,
                        "response": {
                            "status_code": reply.status,
                            "request_id": "req",
                            "body": body,
                        },
                        "error": {"code": error.get("code"), "message": error.get("message")},
                    }
                )
            else:
                output.append(
                    {
                        "id": f"batch_req_{number}",
                        "custom_id": custom_id,
                        "response": {
                            "status_code": 200,
                            "request_id": "req",
                            "body": store.fake.render_json(reply, line),
                        },
                        "error": None,
                    }
                )
        output_file_id = store.file(_jsonl(output)) if output else None
        error_file_id = store.file(_jsonl(errors)) if errors else None
    done = sum(1 for _, reply, _ in batch.answers if reply.status < 400)
    ended = status == "completed"
    return {
        "id": batch.id,
        "object": "batch",
        "endpoint": "/v1/chat/completions",
        "errors": None,
        "input_file_id": "file-input",
        "completion_window": "24h",
        "status": status,
        "output_file_id": output_file_id,
        "error_file_id": error_file_id,
        "created_at": batch.created_at,
        "request_counts": {
            "total": len(batch.answers),
            "completed": done if ended else 0,
            "failed": len(batch.answers) - done if ended else 0,
        },
    }


def anthropic_batch_reply(store: BatchStore, recorded: Recorded, base_url: str) -> Reply | None:
    """``POST /v1/messages/batches``, ``GET /v1/messages/batches/{id}[/results]``, ``POST
    /v1/messages/batches/{id}/cancel`` (None: another call)."""
    parts = recorded.path.strip("/").split("/")
    if parts[:3] != ["v1", "messages", "batches"]:
        return None
    if recorded.method == "POST" and len(parts) == 3:
        requests = [(item["custom_id"], item["params"]) for item in recorded.body["requests"]]
        created = store.create("msgbatch_fake", "/v1/messages", requests)
        return Reply(raw_body=_message_batch(created, base_url))
    batch: FakeBatch | None = store.batches.get(parts[3]) if len(parts) >= 4 else None
    if batch is None:
        return Reply.of_error(404, "No such batch")
    if len(parts) == 5 and parts[4] == "results":
        return Reply(raw_body=_jsonl(_message_results(store, batch)))
    if len(parts) == 5 and parts[4] == "cancel":
        store.cancel(batch)
    else:
        store.polled(batch)
    return Reply(raw_body=_message_batch(batch, base_url))


def _message_batch(batch: FakeBatch, base_url: str) -> dict[str, Any]:
    ended = batch.status in ("ended", "cancelled")
    return {
        "id": batch.id,
        "type": "message_batch",
        "processing_status": "ended" if ended else batch.status.replace("cancelling", "canceling"),
        "request_counts": {
            "processing": 0 if ended else len(batch.answers),
            "succeeded": 0,
            "errored": 0,
            "canceled": 0,
            "expired": 0,
        },
        "created_at": "2026-01-01T00:00:00Z",
        "ended_at": "2026-01-01T00:01:00Z" if ended else None,
        "expires_at": "2026-01-02T00:00:00Z",
        "results_url": f"{base_url}/v1/messages/batches/{batch.id}/results" if ended else None,
    }


def _message_results(store: BatchStore, batch: FakeBatch) -> list[dict[str, Any]]:
    rows = []
    for custom_id, reply, line in batch.answers:
        if batch.status == "cancelled":
            result: dict[str, Any] = {"type": "canceled"}
        elif reply.status >= 400:
            result = {"type": "errored", "error": store.fake.render_error(reply)}
        else:
            result = {"type": "succeeded", "message": store.fake.render_json(reply, line)}
        rows.append({"custom_id": custom_id, "result": result})
    return rows


def _multipart(recorded: Recorded) -> tuple[bytes, str]:
    """The ``file`` and ``purpose`` of a multipart upload."""
    raw = recorded.body if isinstance(recorded.body, str) else json.dumps(recorded.body)
    head = f"Content-Type: {recorded.headers['content-type']}\r\n\r\n".encode()
    message = email.parser.BytesParser(policy=email.policy.HTTP).parsebytes(head + raw.encode())
    data, purpose = b"", ""
    for part in message.iter_parts():
        name = part.get_param("name", header="content-disposition")
        payload = part.get_payload(decode=True)
        if name == "file" and isinstance(payload, bytes):
            data = payload
        elif name == "purpose" and isinstance(payload, bytes):
            purpose = payload.decode()
    return data, purpose
