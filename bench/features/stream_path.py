"""The path of a streamed event through the gateway: how many of our generators it passes
from the upstream read to the ASGI send, and how many sends the reads become.

Runs the gateway's ASGI application in this process (SQLite in a temporary directory)
in front of the fake OpenAI upstream, and streams one reply of 12 events through each
dialect in: the upstream writes them ``--per-write`` at a time. At every read of the
upstream's body that carries an event, it counts the frames of our own async generators
on the stack (each is a step every event takes); it counts the ASGI sends with a body.
With ``--guardrails``, the agent has an output guardrail (one more layer: the window
held back).

    .venv/bin/python -m bench.features.stream_path [--per-write 4] [--guardrails] [--json]
"""

import argparse
import asyncio
import inspect
import json
import os
import sys
import tempfile
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
OPENING = ROOT / "inference" / "providers" / "streaming.py"  # ProviderStream.open
CHUNKS = tuple(f"w{index} " for index in range(12))
DIALECTS: dict[str, tuple[str, dict[str, Any]]] = {
    "chat": ("/v1/chat/completions", {"model": "bench", "stream": True, "messages": []}),
    "responses": ("/v1/responses", {"model": "bench", "stream": True, "input": "Hi"}),
    "messages": (
        "/v1/messages",
        {"model": "bench", "stream": True, "max_tokens": 100, "messages": []},
    ),
    "gemini": ("/v1beta/models/bench:streamGenerateContent?alt=sse", {"contents": []}),
}
_USER = {"role": "user", "content": "Hi"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--per-write", type=int, default=4, help="events in one upstream write")
    parser.add_argument("--guardrails", action="store_true", help="an output guardrail")
    parser.add_argument("--json", action="store_true", help="one JSON object, nothing else")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as workdir:
        results = measure(Path(workdir), options.per_write, options.guardrails)
    if options.json:
        print(json.dumps(results))
        return
    print(f"{len(CHUNKS)} events, {options.per_write} per upstream write")
    print(f"{'dialect':10} {'layers':>6} {'reads':>6} {'sends':>6}   generators")
    for name, result in results.items():
        print(
            f"{name:10} {result['layers']:6d} {result['reads']:6d} {result['sends']:6d}   "
            + " > ".join(result["generators"])
        )


def measure(workdir: Path, per_write: int, guardrails: bool) -> dict[str, dict[str, Any]]:
    """Per dialect: the most generators a read after the opening met, the reads of the
    upstream's body that carried events, and the sends with a body."""
    from tests.fakes.base import Reply
    from tests.fakes.openai_upstream import OpenAIUpstream

    fake = OpenAIUpstream().start()
    guard = ""
    if guardrails:
        guard = "guardrails: [{name: words, kind: denylist, on: [output], words: [zzz]}]\n"
    (workdir / "gateway.yaml").write_text(
        f"providers: {{openai: {{api_key: sk-bench, base_url: '{fake.url}'}}}}\n"
        "default_user_id: bench-user\n"
        "agents: [{name: bench, provider: openai, model: m, history: false"
        + (", guardrails: [words]" if guardrails else "")
        + "}]\n"
        + guard
    )
    os.environ.update(
        GATEWAY_CONFIG=str(workdir / "gateway.yaml"),
        DATABASE_URL=f"sqlite:///{workdir / 'gateway.sqlite3'}",
        DJANGO_SETTINGS_MODULE="gateway.settings",
    )
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)
    reads = _ReadWatch()
    reads.install()
    from gateway.asgi import application

    async def each_dialect() -> dict[str, dict[str, Any]]:
        results = {}
        for name, (path, body) in DIALECTS.items():
            fake.script(Reply.of_chunks(*CHUNKS, events_per_write=per_write))
            reads.layers.clear()
            reads.reads = 0
            sends = await _stream(application, path, _with_question(name, body))
            deepest = max(reads.layers, key=len, default=[])
            results[name] = {
                "layers": len(deepest),
                "reads": reads.reads,
                "sends": sends,
                "generators": deepest,
            }
        return results

    try:
        return asyncio.run(each_dialect())
    finally:
        fake.stop()


class _ReadWatch:
    """Notes our generators on the stack at each read of an upstream body that has data."""

    def __init__(self) -> None:
        self.reads = 0
        self.layers: list[list[str]] = []  # of each read after the call was opened

    def install(self) -> None:
        import httpx

        original = httpx.Response.aiter_raw
        watch = self

        async def aiter_raw(
            response: httpx.Response, chunk_size: int | None = None
        ) -> AsyncIterator[bytes]:
            async for chunk in original(response, chunk_size):
                if chunk.startswith(b"data:") or b"\ndata:" in chunk:
                    watch.reads += 1
                    if (layers := _our_generators(sys._getframe(1))) is not None:
                        watch.layers.append(layers)
                yield chunk

        httpx.Response.aiter_raw = aiter_raw  # type: ignore[method-assign]


def _our_generators(frame: Any) -> list[str] | None:
    """Our async generators on the stack, outermost first; None for a read made while
    the call is opened (the context managers that open it are on the stack once per
    call, not for each event)."""
    names = []
    while frame is not None:
        code = frame.f_code
        path = Path(code.co_filename)
        if code.co_name == "open" and path == OPENING:
            return None
        if code.co_flags & inspect.CO_ASYNC_GENERATOR and path.is_relative_to(ROOT):
            relative = path.relative_to(ROOT)
            if relative.parts[0] not in (".venv", "bench", "tests"):
                names.append(f"{relative.with_suffix('')}.{code.co_name}".replace("/", "."))
        frame = frame.f_back
    return names[::-1]


def _with_question(dialect: str, body: dict[str, Any]) -> dict[str, Any]:
    if dialect in ("chat", "messages"):
        return {**body, "messages": [_USER]}
    if dialect == "gemini":
        return {"contents": [{"role": "user", "parts": [{"text": "Hi"}]}]}
    return body


async def _stream(application: Any, path: str, body: dict[str, Any]) -> int:
    """Sends one request to the ASGI application; the sends that carried a body."""
    content = json.dumps(body).encode()
    route, _, query = path.partition("?")
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": route,
        "raw_path": route.encode(),
        "query_string": query.encode(),
        "root_path": "",
        "headers": [
            (b"host", b"bench"),
            (b"content-type", b"application/json"),
            (b"content-length", str(len(content)).encode()),
            (b"anthropic-version", b"2023-06-01"),
        ],
        "client": ("127.0.0.1", 1),
        "server": ("127.0.0.1", 80),
    }
    requests = [{"type": "http.request", "body": content, "more_body": False}]
    sends = 0
    status = 0

    async def receive() -> dict[str, Any]:
        if requests:
            return requests.pop()
        await asyncio.sleep(3600)
        return {"type": "http.disconnect"}

    async def send(message: dict[str, Any]) -> None:
        nonlocal sends, status
        if message["type"] == "http.response.start":
            status = message["status"]
        elif message.get("body"):
            sends += 1

    await application(scope, receive, send)
    if status != 200:
        raise RuntimeError(f"{path} answered {status}")
    return sends


if __name__ == "__main__":
    main()
