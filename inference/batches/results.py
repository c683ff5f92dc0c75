"""What a batch's ended lines read as: OpenAI's output and error files (JSONL), and
Anthropic's results (JSONL of ``{custom_id, result}``)."""

import json
from typing import Any

from inference.models import BatchLine

# The error of a line that never ran, by how it ended.
_UNSENT = {
    "cancelled": ("batch_cancelled", "The batch was cancelled before the request was sent"),
    "expired": ("batch_expired", "The batch's completion window ended before the request was sent"),
}


def output_lines(lines: list[BatchLine]) -> tuple[bytes, bytes]:
    """(the output file: the lines that succeeded; the error file: the others)."""
    output: list[str] = []
    errors: list[str] = []
    for line in lines:
        if line.status == "succeeded":
            output.append(_json(_entry(line, None)))
        else:
            errors.append(_json(_entry(line, _error(line))))
    return _joined(output), _joined(errors)


def anthropic_results(lines: list[BatchLine]) -> bytes:
    return _joined(
        [_json({"custom_id": line.custom_id, "result": _result(line)}) for line in lines]
    )


def _entry(line: BatchLine, error: dict[str, str] | None) -> dict[str, Any]:
    response = None
    if line.status_code is not None:
        response = {
            "status_code": line.status_code,
            "request_id": line.request_id,
            "body": line.response,
        }
    return {
        "id": f"batch_req_{line.pk}",
        "custom_id": line.custom_id,
        "response": response,
        "error": error,
    }


def _error(line: BatchLine) -> dict[str, str]:
    if line.status in _UNSENT:
        code, message = _UNSENT[line.status]
        return {"code": code, "message": message}
    return {"code": line.error_code, "message": line.error_message}


def _result(line: BatchLine) -> dict[str, Any]:
    if line.status == "succeeded":
        return {"type": "succeeded", "message": line.response}
    if line.status == "cancelled":
        return {"type": "canceled"}
    if line.status == "expired":
        return {"type": "expired"}
    error = line.response
    if not (isinstance(error, dict) and error.get("type") == "error"):
        error = {"type": "error", "error": {"type": "api_error", "message": line.error_message}}
    return {"type": "errored", "error": error}


def _json(value: dict[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _joined(lines: list[str]) -> bytes:
    return "".join(f"{line}\n" for line in lines).encode()
