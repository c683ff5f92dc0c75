"""What a client asked for, in the gateway's neutral terms, whatever dialect it spoke: each
dialect's reader builds one ``ClientRequest`` (``inference.dialects``), and everything
after it reads only this."""

from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from inference.neutral.types import (
    Document,
    Image,
    Message,
    Part,
    ResponseFormat,
    Sampling,
    ToolChoice,
    ToolSpec,
)


@dataclass(frozen=True)
class Claims:
    """Where a request names its user, each as the client (or the gate in front) gave it.
    ``inference.turn.identity`` decides which one holds."""

    safety_identifier: str | None = None
    user: str | None = None
    header_user: str | None = None  # X-User-Id, for clients that cannot set body fields
    bound_user: str | None = None  # the authenticated principal, with auth.proxy.bind_user
    # A user the client names on its own, after X-User-Id (Messages' metadata.user_id).
    client_label: str | None = None


@dataclass(frozen=True)
class ToolOffer:
    """The client's tools: offered to the model beside the agent's own, and the ones the
    gateway cannot offer (built-in tools of the client's API, named in a response
    header)."""

    specs: tuple[ToolSpec, ...] = ()
    choice: ToolChoice | None = None
    parallel: bool | None = None
    dropped: tuple[str, ...] = ()
    # Where each spec's parameters schema is in the request, for a refusal that names it
    # (the schemas are checked once the request is admitted: ``readers.check_tool_schemas``).
    schema_params: tuple[str, ...] = ()


@dataclass(frozen=True)
class ClientRequest:
    model: str
    system: tuple[str, ...]  # the request's own system (and developer) messages
    messages: tuple[Message, ...]  # the conversation, system messages left out
    claims: Claims = field(default_factory=Claims)
    tools: ToolOffer = field(default_factory=ToolOffer)
    sampling: Sampling = field(default_factory=Sampling)
    response_format: ResponseFormat | None = None
    metadata: dict[str, str] | None = None
    stream: bool = False
    include_usage: bool = False
    conversation_param: str = "messages"  # the field that carries the conversation
    # Anthropic's prompt-cache breakpoint the client put on its system part.
    system_cache_control: dict[str, Any] | None = None
    chained: bool = False  # it continues a stored conversation (previous_response_id)
    cache_control: str | None = None  # the request's Cache-Control header (the cache's)

    @cached_property
    def user_text(self) -> str | None:
        """The text of the last user message (as history keeps it)."""
        for message in reversed(self.messages):
            if message.role == "user":
                return remembered_text(message)
        return None

    @property
    def manages_history(self) -> bool:
        """Whether the client sends the conversation itself: a stored chain, or assistant
        turns of its own (then no stored history is replayed)."""
        return self.chained or any(message.role == "assistant" for message in self.messages)


def remembered_text(message: Message) -> str:
    """A message's text as history keeps it: ``[image]`` where an image was, and
    ``[file: <name>]`` where a document was."""
    if not message.parts:
        return message.content
    return "".join(_remembered(part) for part in message.parts)


def _remembered(part: Part) -> str:
    if isinstance(part, str):
        return part
    if isinstance(part, Image):
        return "[image]"
    if isinstance(part, Document):
        return f"[file: {part.filename}]"
    return part.text
