"""How guardrails refuse: a request before any upstream call (a 400 in the dialect's
shape), a reply (a short refusal with the content-filter ending), a tool result (a
marker the model gets instead)."""

from dataclasses import replace

from inference.neutral.types import ChatResponse
from inference.providers.base import ProviderError

type Stopped = tuple[str, str]  # the guardrail that stopped a reply, and why


class GuardrailBlocked(ProviderError):
    """A request a guardrail refused before any upstream call."""

    def __init__(self, guardrail: str, found: str) -> None:
        super().__init__(
            400,
            f"guardrail_blocked: the request was blocked by guardrail '{guardrail}' ({found})",
            code="guardrail_blocked",
            error_type="invalid_request_error",
        )


def withheld(guardrail: str) -> str:
    return f"[tool result withheld by guardrail {guardrail}]"


def refusal(guardrail: str, reason: str) -> str:
    return f"The reply was stopped by guardrail '{guardrail}' ({reason})."


def refused(reply: ChatResponse, stopped: Stopped) -> ChatResponse:
    return replace(
        reply, text=refusal(*stopped), tool_calls=(), finish_reason="content_filter", logprobs=None
    )
