"""The bodies of ``POST /v1/messages`` and ``POST /v1/messages/count_tokens`` as we
accept them."""

from typing import Any

from pydantic import ConfigDict, Field, FiniteFloat, field_validator

from inference.neutral.body import Lenient, counted_before_read


class CountTokensIn(Lenient):
    """The body of ``POST /v1/messages/count_tokens``; unknown fields are kept (they are
    passed on to Anthropic upstreams)."""

    model_config = ConfigDict(extra="allow")
    model: str
    messages: list[dict[str, Any]]
    _messages_counted = field_validator("messages", mode="before")(counted_before_read)
    system: str | list[dict[str, Any]] | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: dict[str, Any] | None = None
    thinking: dict[str, Any] | None = None


class MessagesIn(CountTokensIn):
    """The body of ``POST /v1/messages``."""

    max_tokens: int = Field(ge=1)
    stop_sequences: list[str] | None = None
    temperature: FiniteFloat | None = None
    top_p: FiniteFloat | None = None
    top_k: int | None = Field(default=None, ge=1)
    metadata: dict[str, Any] | None = None
    stream: bool = False
