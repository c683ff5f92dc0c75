"""The body of ``POST /v1/chat/completions`` as we accept it.

Unknown fields are ignored, as OpenAI-compatible servers do; known fields are typed so
a wrong type is a 400 naming the field.
"""

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat


class _Lenient(BaseModel):
    model_config = ConfigDict(extra="ignore")


class ContentPart(_Lenient):
    type: str
    text: str | None = None


class FunctionCallIn(_Lenient):
    name: str
    arguments: str = "{}"


class ToolCallIn(_Lenient):
    id: str
    type: Literal["function"] = "function"
    function: FunctionCallIn


class ChatMessageIn(_Lenient):
    role: Literal["system", "developer", "user", "assistant", "tool"]
    content: str | list[ContentPart] | None = None
    name: str | None = None
    tool_calls: list[ToolCallIn] | None = None
    tool_call_id: str | None = None

    @property
    def text(self) -> str:
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text or "" for part in self.content if part.type == "text")


class StreamOptions(_Lenient):
    include_usage: bool = False


class ChatCompletionIn(_Lenient):
    model: str
    messages: list[ChatMessageIn] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    safety_identifier: str | None = None
    user: str | None = None
    metadata: dict[str, str] | None = None
    response_format: dict[str, Any] | None = None
    temperature: FiniteFloat | None = None
    top_p: FiniteFloat | None = None
    max_tokens: int | None = None
    max_completion_tokens: int | None = None
    stop: str | list[str] | None = None
    seed: int | None = None
    tools: list[dict[str, Any]] | None = None
    tool_choice: str | dict[str, Any] | None = None
    parallel_tool_calls: bool | None = None
