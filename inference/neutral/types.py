"""The neutral request, response and stream-event model every wire format maps to.

Nothing provider-specific crosses this line: the pipeline builds a ``ChatRequest``,
a provider module turns it into its own HTTP call and turns the answer back into a
``ChatResponse`` or a sequence of ``StreamEvent``.
"""

import json
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from core.float32 import Vector
from core.providerkinds import WireFormat

Role = Literal["user", "assistant", "tool"]


# Tokens of thought for each reasoning effort, where a provider takes a budget instead:
# the efforts every provider kind can be given.
THINKING_BUDGETS = {"none": 0, "minimal": 0, "low": 1024, "medium": 4096, "high": 16384}


def arguments_object(arguments: str) -> dict[str, Any]:
    """Tool-call arguments as a JSON object (as Anthropic and Gemini take and give them),
    from the JSON text a call carries ({} where that text is not an object)."""
    try:
        value = json.loads(arguments or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


@dataclass(frozen=True)
class ToolCall:
    id: str
    name: str
    arguments: str  # JSON text, as the model wrote it
    # Opaque token a provider needs back with the call in later turns (Gemini's thought
    # signature); None for providers that have none.
    signature: str | None = None


@dataclass(frozen=True)
class Image:
    """An image in a message: an https URL, or a ``data:`` URI with the bytes."""

    url: str

    @property
    def inline(self) -> tuple[str, str] | None:
        """(media type, base64 data) of a ``data:`` URI; None for a URL."""
        if not self.url.startswith("data:"):
            return None
        header, _, data = self.url.partition(",")
        return header.removeprefix("data:").split(";")[0] or "image/png", data


@dataclass(frozen=True)
class Block:
    """A content block only Anthropic upstreams get as it is: text the client marked with
    ``cache_control`` (it stays its own block there, so the cached prefix ends exactly at
    the breakpoint), or a document. Every other provider gets ``text``."""

    block: dict[str, Any]
    text: str


@dataclass(frozen=True)
class Document:
    """A file in a message (docs/files.md): a PDF or a text-like file, its bytes as base64,
    its media type and name. Read from a request it may be only a gateway ``file_id``,
    resolved before the turn calls a model (``inference.files.resolution``); ``where`` is
    its place in the request, for a refusal that names it. ``text``: a text-like file's
    text, or a PDF's as ``pypdf`` extracts it, for providers that take no documents.
    ``block``: the Messages API block it came in, for Anthropic upstreams."""

    filename: str
    media_type: str = ""
    data: str = ""
    file_id: str | None = None
    where: str = ""
    text: str | None = None
    block: dict[str, Any] | None = None

    @property
    def is_pdf(self) -> bool:
        return self.media_type == "application/pdf"

    @property
    def as_text(self) -> str:
        """The text part a provider without document input gets: the name, then the text."""
        return f"[{self.filename}]\n{self.text or '(no text could be read from it)'}"


Part = str | Image | Block | Document  # a piece of a message's content


@dataclass(frozen=True)
class Message:
    role: Role
    content: str  # the text (of all text parts, when there are parts)
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None  # on role "tool": the call this result answers
    name: str | None = None  # on role "tool": the tool's name (Gemini needs it)
    parts: tuple[Part, ...] = ()  # the content in order, when it is not only text
    # On role "assistant": opaque items of the model's reasoning that its provider needs
    # back with this turn (Anthropic's signed thinking blocks); only the provider module
    # that produced them reads them.
    reasoning: tuple[Any, ...] = ()
    # Anthropic's prompt-cache breakpoint at the end of this message (its last block).
    cache_control: dict[str, Any] | None = None
    failed: bool = False  # on role "tool": the client says the call failed

    @property
    def result_text(self) -> str:
        """A tool result's text as a provider without an error flag is sent it (Anthropic
        gets ``is_error`` instead)."""
        return f"Error: {self.content}" if self.failed else self.content

    @property
    def with_media(self) -> bool:
        """Whether it has images or documents (else its text says it all)."""
        # Most messages (every replayed one of text) have no parts: no generator for them.
        return bool(self.parts) and any(isinstance(part, Image | Document) for part in self.parts)


@dataclass(frozen=True)
class ToolSpec:
    name: str
    description: str
    parameters: dict[str, Any]


@dataclass(frozen=True)
class ToolChoice:
    """Whether the model may, must or must not call tools; ``name``: this tool only."""

    mode: Literal["auto", "none", "required"] = "auto"
    name: str | None = None


@dataclass(frozen=True)
class ResponseFormat:
    kind: Literal["json_object", "json_schema"]
    schema: dict[str, Any] | None = None
    name: str = "response"
    strict: bool = False

    @property
    def object_schema(self) -> dict[str, Any] | None:
        """The schema if it has an object root, which most native JSON modes require."""
        if self.schema is not None and self.schema.get("type") == "object":
            return self.schema
        return None


@dataclass(frozen=True)
class Sampling:
    """How to sample, with the parameters the client gave (each provider module maps
    what it can to its own names and drops the rest; see docs/api.md)."""

    temperature: float | None = None
    top_p: float | None = None
    max_tokens: int | None = None
    # The name the client gave the limit: OpenAI-format kinds get it under that name
    # (reasoning models refuse max_tokens).
    max_tokens_name: Literal["max_tokens", "max_completion_tokens"] = "max_tokens"
    stop: tuple[str, ...] = ()
    seed: int | None = None
    frequency_penalty: float | None = None
    presence_penalty: float | None = None
    reasoning_effort: str | None = None
    logprobs: bool | None = None
    top_logprobs: int | None = None
    top_k: int | None = None  # Anthropic, Gemini and Cohere have it; OpenAI-format kinds not
    # What the client sent that only upstreams of its own wire format know.
    passthrough: "PassThrough | None" = None

    def passed_to(self, wire: WireFormat) -> "PassThrough":
        """What an upstream of ``wire`` gets as it came (nothing, for another format)."""
        passthrough = self.passthrough
        if passthrough is None or passthrough.wire != wire:
            return NOTHING_PASSED
        return passthrough


@dataclass(frozen=True)
class PassThrough:
    """Parameters the gateway does not model and request headers, as a client sent them
    in the dialect of ``wire``: an upstream speaking that wire format gets them as they
    came, the others never see them."""

    wire: WireFormat
    fields: Mapping[str, Any] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)


NOTHING_PASSED = PassThrough("openai")


@dataclass(frozen=True)
class ChatRequest:
    model: str
    system: str
    messages: tuple[Message, ...]
    sampling: Sampling = Sampling()
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice | None = None  # None: the provider's default (auto)
    parallel_tool_calls: bool | None = None  # None: the provider's default
    response_format: ResponseFormat | None = None
    # Anthropic's prompt-cache breakpoint at the end of the system prompt, where the
    # client marked its system part.
    system_cache_control: dict[str, Any] | None = None


@dataclass(frozen=True)
class Usage:
    prompt_tokens: int = 0
    completion_tokens: int = 0
    # Of those, where the provider reports them (None: not reported): prompt tokens read
    # from its cache, prompt tokens written to it, completion tokens spent reasoning.
    cached_tokens: int | None = None
    reasoning_tokens: int | None = None
    cache_write_tokens: int | None = None
    # What the calls cost, in millionths of a US dollar (inference.money.prices); None
    # when a call's model has no known price.
    cost_micro_usd: int | None = 0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def __add__(self, other: "Usage") -> "Usage":
        cost = (
            None
            if self.cost_micro_usd is None or other.cost_micro_usd is None
            else self.cost_micro_usd + other.cost_micro_usd
        )
        return Usage(
            self.prompt_tokens + other.prompt_tokens,
            self.completion_tokens + other.completion_tokens,
            _known_sum(self.cached_tokens, other.cached_tokens),
            _known_sum(self.reasoning_tokens, other.reasoning_tokens),
            _known_sum(self.cache_write_tokens, other.cache_write_tokens),
            cost,
        )

    @property
    def cost_usd(self) -> float | None:
        return None if self.cost_micro_usd is None else self.cost_micro_usd / 1_000_000


def _known_sum(first: int | None, second: int | None) -> int | None:
    return None if first is None and second is None else (first or 0) + (second or 0)


FinishReason = Literal["stop", "length", "tool_calls", "content_filter"]


@dataclass(frozen=True)
class ChatResponse:
    text: str
    finish_reason: FinishReason = "stop"
    usage: Usage = Usage()
    tool_calls: tuple[ToolCall, ...] = ()
    logprobs: Any = None  # the provider's logprobs object, where it gives OpenAI's shape
    reasoning: tuple[Any, ...] = ()  # see Message.reasoning
    # The upstream's id of the reply and the model that wrote it, where it says (traces).
    response_id: str | None = None
    response_model: str | None = None
    # A "stop" at one of the request's stop sequences, where the provider says so
    # (Anthropic, Cohere): the Messages API tells it apart.
    by_stop_sequence: bool = False


@dataclass(frozen=True)
class TextDelta:
    text: str
    logprobs: Any = None  # the provider's logprobs of this piece, where it gives OpenAI's shape


@dataclass(frozen=True)
class ToolCallDelta:
    """A piece of one tool call; ``id`` and ``name`` arrive on its first piece."""

    index: int
    id: str | None = None
    name: str | None = None
    arguments: str = ""
    signature: str | None = None


@dataclass(frozen=True)
class Reasoning:
    """One whole opaque reasoning item of the reply (see ``Message.reasoning``)."""

    item: Any


@dataclass(frozen=True)
class Finish:
    reason: FinishReason
    response_id: str | None = None  # as on ChatResponse
    response_model: str | None = None
    by_stop_sequence: bool = False  # as on ChatResponse


@dataclass(frozen=True)
class EmbeddingRequest:
    model: str
    texts: tuple[str, ...]
    dimensions: int | None = None
    # What the vectors are for, where the provider asks (Cohere's input_type, Gemini's
    # taskType): texts to be searched, or a query searching them.
    purpose: Literal["document", "query"] = "document"
    # Inputs already tokenized by the client (instead of ``texts``), for the providers
    # whose tokenizer they belong to (OpenAI's format; ``Provider.takes_token_arrays``).
    token_arrays: tuple[tuple[int, ...], ...] = ()

    @property
    def count(self) -> int:
        """How many inputs (one vector each)."""
        return len(self.token_arrays) or len(self.texts)


@dataclass(frozen=True)
class Embeddings:
    # One one-dimensional array per input, in order: float32 where the provider sent
    # float32 bytes (OpenAI's base64), float64 where it sent JSON numbers (as sent).
    vectors: tuple[Vector, ...]
    prompt_tokens: int | None  # the provider's count (None: it gives none)


@dataclass(frozen=True)
class UsageReport:
    usage: Usage


StreamEvent = TextDelta | ToolCallDelta | Reasoning | Finish | UsageReport


@dataclass
class StreamAccumulator:
    """Folds stream events into the ``ChatResponse`` they add up to."""

    text: list[str] = field(default_factory=list)
    calls: dict[int, ToolCall] = field(default_factory=dict)
    reasoning: list[Any] = field(default_factory=list)
    finish_reason: FinishReason = "stop"
    usage: Usage = Usage()
    finish: Finish | None = None

    def add(self, event: StreamEvent) -> None:
        match event:
            case TextDelta(text=text):
                self.text.append(text)
            case ToolCallDelta():
                call = self.calls.get(event.index, ToolCall(id="", name="", arguments=""))
                self.calls[event.index] = ToolCall(
                    id=event.id or call.id,
                    name=event.name or call.name,
                    arguments=call.arguments + event.arguments,
                    signature=event.signature or call.signature,
                )
            case Reasoning(item=item):
                self.reasoning.append(item)
            case Finish(reason=reason):
                self.finish_reason, self.finish = reason, event
            case UsageReport(usage=usage):
                self.usage = usage

    def response(self) -> ChatResponse:
        calls = tuple(
            replace(call, arguments=call.arguments or "{}")
            for _, call in sorted(self.calls.items())
        )
        return ChatResponse(
            text="".join(self.text),
            finish_reason=self.finish_reason,
            usage=self.usage,
            tool_calls=calls,
            reasoning=tuple(self.reasoning),
            response_id=self.finish.response_id if self.finish else None,
            response_model=self.finish.response_model if self.finish else None,
            by_stop_sequence=self.finish.by_stop_sequence if self.finish else False,
        )


_REPLAYED_CHUNK = 40  # characters of text per event


def replayed(response: ChatResponse) -> list[StreamEvent]:
    """A whole reply as the content events of a stream: its reasoning items, its text in
    pieces, then each tool call."""
    events: list[StreamEvent] = [Reasoning(item) for item in response.reasoning]
    events += [
        TextDelta(response.text[start : start + _REPLAYED_CHUNK])
        for start in range(0, len(response.text), _REPLAYED_CHUNK)
    ]
    events += [
        ToolCallDelta(call_index, call.id, call.name, call.arguments, call.signature)
        for call_index, call in enumerate(response.tool_calls)
    ]
    return events
