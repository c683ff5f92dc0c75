"""The body of ``POST /v1/responses`` as we accept it (``Lenient``: unknown fields are
ignored, known ones typed)."""

from typing import Any

from pydantic import Field, FiniteFloat, field_validator

from inference.neutral.body import Lenient, counted_before_read


class ResponsesIn(Lenient):
    """The body of ``POST /v1/responses``."""

    model: str
    input: str | list[dict[str, Any]]
    _input_counted = field_validator("input", mode="before")(counted_before_read)
    instructions: str | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
    text: dict[str, Any] | None = None
    reasoning: dict[str, Any] | None = None
    temperature: FiniteFloat | None = None
    top_p: FiniteFloat | None = None
    max_output_tokens: int | None = Field(default=None, ge=1)
    top_logprobs: int | None = None
    service_tier: str | None = None
    metadata: dict[str, str] | None = None
    user: str | None = None
    safety_identifier: str | None = None
    stream: bool = False
    store: bool | None = None  # None: true, as OpenAI
    previous_response_id: str | None = None
    # Server-side features, refused with a 400 naming each.
    conversation: Any = None
    background: bool | None = None
    prompt: Any = None
