"""What the benchmarks send: one timed request, and the mixed traffic of the long runs."""

import time
from typing import Any

import httpx


def bench_config(upstream: str, extra: str = "", provider: str = "") -> str:
    """A config with one agent, ``bench``, on the OpenAI-format upstream at ``upstream``
    (the fake's base URL), plus ``extra`` YAML lines; ``provider``: more settings of the
    provider (``batch: native``)."""
    settings = f", {provider}" if provider else ""
    return (
        f"providers: {{openai: {{api_key: sk-bench, base_url: '{upstream}'{settings}}}}}\n"
        "agents: [{name: bench, provider: openai, model: m, preamble: You are a benchmark.}]\n"
        + extra
    )


def timed(client: httpx.Client, url: str, body: dict[str, Any]) -> float:
    """Milliseconds one POST took (an error status fails the run)."""
    started = time.perf_counter()
    response = client.post(url, json=body)
    elapsed = time.perf_counter() - started
    response.raise_for_status()
    return elapsed * 1000


def mixed_body(model: str, index: int, users: int) -> dict[str, Any]:
    """Request ``index`` of a steady mix: users in turn, every other one streamed, every
    fifth with a (never reached) token budget, so every path of a turn is exercised."""
    body: dict[str, Any] = {
        "model": model,
        "messages": [{"role": "user", "content": f"question {index}"}],
        "safety_identifier": f"{model}-user-{index % users}",
    }
    if index % 2:
        body |= {"stream": True, "stream_options": {"include_usage": True}}
    if index % 5 == 0:
        body["metadata"] = {"tokens_per_hour": "1000000000"}
    return body
