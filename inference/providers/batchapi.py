"""The providers' own batch APIs, for native mode (docs/batches.md): OpenAI's Files and
Batch APIs, and Anthropic's Message Batches. Each sends one provider batch of request
bodies (by ``custom_id``), reads its state, cancels it, and reads what it answered each
line, through the provider's shared HTTP client."""

import json
from dataclasses import dataclass
from typing import Any, Literal, Protocol

import httpx

from inference.providers.base import Provider, ProviderError

# What a provider batch may take before it ends: OpenAI's one window.
COMPLETION_WINDOW = "24h"
# The path of OpenAI's chat completions as its Batch API names the lines' endpoint.
_CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class LineResult:
    """What the provider batch answered one line: the reply's body (``status`` 200), or an
    error's status, code and message; ``unsent``: the provider never ran it (its batch was
    cancelled or expired first)."""

    status: int
    body: dict[str, Any] | None = None
    code: str = ""
    message: str = ""
    unsent: Literal["", "cancelled", "expired"] = ""


class BatchApi(Protocol):
    async def send(self, bodies: dict[str, dict[str, Any]]) -> str:
        """The provider batch of ``bodies`` (by custom id) created: its id."""
        ...

    async def state(self, batch_id: str) -> dict[str, Any]: ...

    def ended(self, state: dict[str, Any]) -> bool: ...

    async def results(self, state: dict[str, Any], custom_ids: list[str]) -> dict[str, LineResult]:
        """What the ended batch answered each of ``custom_ids``."""
        ...

    async def cancel(self, batch_id: str) -> None: ...


def batch_api(provider: Provider) -> BatchApi:
    """The batch API of ``provider`` (its kind: ``core.providerkinds.NATIVE_BATCH_KINDS``)."""
    if provider.wire == "anthropic":
        return MessageBatches(provider)
    return OpenAIBatches(provider)


class OpenAIBatches:
    """The lines as a JSONL file of purpose ``batch`` (``POST /files``), a batch of it
    (``POST /batches``), polled (``GET /batches/{id}``); the output and error files read
    when it ended (``GET /files/{id}/content``)."""

    ENDED = frozenset({"completed", "failed", "expired", "cancelled"})

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.base = provider.base_url

    async def send(self, bodies: dict[str, dict[str, Any]]) -> str:
        lines = [
            {"custom_id": custom_id, "method": "POST", "url": _CHAT_PATH, "body": body}
            for custom_id, body in bodies.items()
        ]
        data = "".join(json.dumps(line, separators=(",", ":")) + "\n" for line in lines)
        uploaded = await _call(
            self.provider,
            "POST",
            f"{self.base}/files",
            files={"file": ("batch.jsonl", data.encode(), "application/jsonl")},
            data={"purpose": "batch"},
        )
        created = await _call(
            self.provider,
            "POST",
            f"{self.base}/batches",
            json={
                "input_file_id": uploaded.json()["id"],
                "endpoint": _CHAT_PATH,
                "completion_window": COMPLETION_WINDOW,
            },
        )
        return str(created.json()["id"])

    async def state(self, batch_id: str) -> dict[str, Any]:
        answer: dict[str, Any] = (
            await _call(self.provider, "GET", f"{self.base}/batches/{batch_id}")
        ).json()
        return answer

    def ended(self, state: dict[str, Any]) -> bool:
        return state.get("status") in self.ENDED

    async def results(self, state: dict[str, Any], custom_ids: list[str]) -> dict[str, LineResult]:
        found: dict[str, LineResult] = {}
        for file_id in (state.get("output_file_id"), state.get("error_file_id")):
            if not file_id:
                continue
            content = await _call(self.provider, "GET", f"{self.base}/files/{file_id}/content")
            for line in content.text.splitlines():
                if line.strip():
                    entry = json.loads(line)
                    found[entry["custom_id"]] = _openai_result(entry)
        missing = _missing(state)
        return {custom_id: found.get(custom_id, missing) for custom_id in custom_ids}

    async def cancel(self, batch_id: str) -> None:
        await _call(self.provider, "POST", f"{self.base}/batches/{batch_id}/cancel")


def _missing(state: dict[str, Any]) -> LineResult:
    """What a line has no result for: it never ran (its batch was cancelled or expired),
    or the batch failed as a whole (its ``errors``)."""
    status = state.get("status")
    if status == "cancelled":
        return LineResult(499, unsent="cancelled")
    if status == "expired":
        return LineResult(499, unsent="expired")
    errors = (state.get("errors") or {}).get("data") or [{}]
    message = errors[0].get("message") or "the provider batch has no result for the request"
    return LineResult(502, code="upstream_error", message=str(message))


def _openai_result(entry: dict[str, Any]) -> LineResult:
    response = entry.get("response") or {}
    status = int(response.get("status_code") or 500)
    body = response.get("body")
    if status == 200 and isinstance(body, dict) and not entry.get("error"):
        return LineResult(200, body)
    error = entry.get("error") or (body.get("error") if isinstance(body, dict) else None) or {}
    return LineResult(
        status if status >= 400 else 502,
        code=str(error.get("code") or "upstream_error"),
        message=str(error.get("message") or "the provider batch failed the request"),
    )


class MessageBatches:
    """The lines as one Message Batch (``POST /v1/messages/batches`` of ``{custom_id,
    params}``), polled until its ``processing_status`` is ``ended``, its ``results_url``
    read (JSONL of ``{custom_id, result}``)."""

    def __init__(self, provider: Provider) -> None:
        self.provider = provider
        self.url = f"{provider.base_url}/v1/messages/batches"

    async def send(self, bodies: dict[str, dict[str, Any]]) -> str:
        requests = [{"custom_id": custom_id, "params": body} for custom_id, body in bodies.items()]
        created = await _call(self.provider, "POST", self.url, json={"requests": requests})
        return str(created.json()["id"])

    async def state(self, batch_id: str) -> dict[str, Any]:
        answer: dict[str, Any] = (
            await _call(self.provider, "GET", f"{self.url}/{batch_id}")
        ).json()
        return answer

    def ended(self, state: dict[str, Any]) -> bool:
        return state.get("processing_status") == "ended"

    async def results(self, state: dict[str, Any], custom_ids: list[str]) -> dict[str, LineResult]:
        found: dict[str, LineResult] = {}
        url = state.get("results_url")
        if url:
            content = await _call(self.provider, "GET", url)
            for line in content.text.splitlines():
                if line.strip():
                    entry = json.loads(line)
                    found[entry["custom_id"]] = _anthropic_result(entry.get("result") or {})
        missing = LineResult(502, code="upstream_error", message="the batch has no result for it")
        return {custom_id: found.get(custom_id, missing) for custom_id in custom_ids}

    async def cancel(self, batch_id: str) -> None:
        await _call(self.provider, "POST", f"{self.url}/{batch_id}/cancel")


# Anthropic's error types, as the HTTP statuses its live API answers them with.
_ANTHROPIC_STATUSES = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "overloaded_error": 529,
}


def _anthropic_result(result: dict[str, Any]) -> LineResult:
    kind = result.get("type")
    if kind == "succeeded" and isinstance(result.get("message"), dict):
        return LineResult(200, result["message"])
    if kind == "canceled":
        return LineResult(499, unsent="cancelled")
    if kind == "expired":
        return LineResult(499, unsent="expired")
    error = (result.get("error") or {}).get("error") or {}
    error_type = str(error.get("type") or "api_error")
    return LineResult(
        _ANTHROPIC_STATUSES.get(error_type, 500),
        code=error_type,
        message=str(error.get("message") or "the provider batch failed the request"),
    )


async def _call(provider: Provider, method: str, url: str, **content: Any) -> httpx.Response:
    """One call of the batch API; a failure status or a broken connection is a
    ``ProviderError``."""
    try:
        response = await provider.client.request(
            method, url, headers=provider.headers(), timeout=provider.timeouts.total, **content
        )
    except httpx.HTTPError as error:
        raise ProviderError(
            502,
            f"{provider.name}'s batch API could not be reached ({type(error).__name__})",
            retryable=True,
        ) from error
    if response.status_code >= 400:
        raise provider.failed(response.status_code, response.text, response.headers)
    return response
