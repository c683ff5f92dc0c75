"""A fake of the OpenAI chat-completions API (also what groq and deepseek speak).

Run it alone to try the gateway without API keys:
``python -m tests.fakes.openai_upstream --port 9100`` answers every call with
"You said: <your last message>".
"""

import argparse
import json
import time
from collections.abc import Iterator
from typing import Any

from tests.fakes.base import FakeUpstream, Recorded, Reply, sse


class OpenAIUpstream(FakeUpstream):
    @property
    def base_url(self) -> str:
        return f"{self.url}/v1"

    def is_stream(self, recorded: Recorded) -> bool:
        return bool(isinstance(recorded.body, dict) and recorded.body.get("stream"))

    def last_user_text(self, recorded: Recorded) -> str:
        messages = recorded.body.get("messages", []) if isinstance(recorded.body, dict) else []
        users = [message.get("content") for message in messages if message.get("role") == "user"]
        return str(users[-1]) if users else ""

    def render_json(self, reply: Reply, recorded: Recorded) -> dict[str, Any]:
        message: dict[str, Any] = {"role": "assistant", "content": reply.text or None}
        if reply.tool_calls:
            message["tool_calls"] = tool_calls_json(reply)
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": self._model(recorded),
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "finish_reason": reply.finish_reason,
                    "logprobs": None,
                }
            ],
            "usage": _usage(reply),
        }

    def render_stream(self, reply: Reply, recorded: Recorded) -> Iterator[bytes]:
        envelope = {
            "id": "chatcmpl-fake",
            "object": "chat.completion.chunk",
            "created": int(time.time()),
            "model": self._model(recorded),
        }

        def chunk(delta: dict[str, Any], finish_reason: str | None = None) -> bytes:
            choice = {"index": 0, "delta": delta, "finish_reason": finish_reason}
            return sse({**envelope, "choices": [choice]})

        yield chunk({"role": "assistant", "content": ""})
        for text in reply.chunks:
            yield chunk({"content": text})
        for index, (name, arguments) in enumerate(reply.tool_calls):
            call = {"index": index, "id": f"call_{index}", "type": "function"}
            yield chunk({"tool_calls": [{**call, "function": {"name": name, "arguments": ""}}]})
            yield chunk(
                {"tool_calls": [{"index": index, "function": {"arguments": json.dumps(arguments)}}]}
            )
        yield chunk({}, reply.finish_reason)
        options = recorded.body.get("stream_options") or {}
        if options.get("include_usage"):
            yield sse({**envelope, "choices": [], "usage": _usage(reply)})
        yield sse("[DONE]")

    def render_error(self, reply: Reply) -> Any:
        if isinstance(reply.error_body, str):
            return {
                "error": {
                    "message": reply.error_body,
                    "type": "invalid_request_error",
                    "code": None,
                }
            }
        return reply.error_body

    def _model(self, recorded: Recorded) -> str:
        return str(recorded.body.get("model", "")) if isinstance(recorded.body, dict) else ""


def tool_calls_json(reply: Reply) -> list[dict[str, Any]]:
    """The reply's tool calls in the OpenAI shape, which Cohere v2 shares."""
    return [
        {
            "id": f"call_{index}",
            "type": "function",
            "function": {"name": name, "arguments": json.dumps(arguments)},
        }
        for index, (name, arguments) in enumerate(reply.tool_calls)
    ]


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description="Fake OpenAI upstream for trying the gateway.")
    parser.add_argument("--port", type=int, default=9100)
    fake = OpenAIUpstream(port=parser.parse_args().port)
    print(f"fake OpenAI upstream on {fake.base_url}", flush=True)
    fake.start()
    fake._thread.join()


if __name__ == "__main__":
    main()
