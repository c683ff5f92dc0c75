"""The body of ``POST /v1/chat/completions`` as we accept it (``Lenient``: unknown fields
are ignored, known ones typed)."""

from typing import Any, Literal

from pydantic import Field, FiniteFloat, field_validator

from inference.neutral.body import MAX_MESSAGES, Lenient, counted_before_read


class ImageUrlIn(Lenient):
    url: str
    detail: str | None = None


class ContentPart(Lenient):
    type: str
    text: str | None = None
    refusal: str | None = None  # on an assistant message's "refusal" part
    image_url: ImageUrlIn | None = None
    file: dict[str, Any] | None = None  # {file_id} or {file_data, filename}
    cache_control: dict[str, Any] | None = None  # Anthropic's prompt-cache breakpoint


class FunctionCallIn(Lenient):
    name: str
    arguments: str = "{}"


class ToolCallIn(Lenient):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCallIn


class ChatMessageIn(Lenient):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None
    cache_control: dict[str, Any] | None = None  # Anthropic's prompt-cache breakpoint

    @property
    def breakpoint(self) -> dict[str, Any] | None:
        """The message's cache_control, or its last marked part's."""
        parts = self.content if isinstance(self.content, list) else []
        marked = [part.cache_control for part in parts if part.cache_control]
        return marked[-1] if marked else self.cache_control

    @property
    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(
            (part.text if part.type == "text" else part.refusal) or ""
            for part in self.content
            if part.type in ("text", "refusal")
        )


class StreamOptions(Lenient):
    include_usage: bool = False


class ChatCompletionIn(Lenient):
    model: str
    messages: list[ChatMessageIn] = Field(min_length=1, max_length=MAX_MESSAGES)
    _messages_counted = field_validator("messages", mode="before")(counted_before_read)
    stream: bool = False
    stream_options: StreamOptions | None = None
    safety_identifier: str | None = None
    user: str | None = None
    metadata: dict[str, str] | None = None
    response_format: dict[str, Any] | None = None
    temperature: FiniteFloat | None = None
    top_p: FiniteFloat | None = None
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    stop: str | list[str] | None = None
    seed: int | None = None
    n: int | None = None
    frequency_penalty: FiniteFloat | None = None
    presence_penalty: FiniteFloat | None = None
    reasoning_effort: str | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    logit_bias: dict[str, float] | None = None
    service_tier: str | None = None
    verbosity: str | None = None
    prediction: dict[str, Any] | None = None
    modalities: list[str] | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
