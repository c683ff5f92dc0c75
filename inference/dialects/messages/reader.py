"""A ``POST /v1/messages`` body (the Anthropic Messages API) in the gateway's neutral
terms (docs/messages.md).

What only Anthropic knows rides along for Anthropic upstreams and is left out for the
others: thinking blocks (with their signatures) in the assistant turns they came in,
``cache_control`` breakpoints, documents, ``thinking`` and the top-level fields the
gateway does not model, and the ``anthropic-beta`` header.
"""

import json
from typing import Any

from agents.schema import LimitsConfig
from inference.dialects.messages.body import CountTokensIn, MessagesIn
from inference.neutral import readers
from inference.neutral.errors import invalid_request
from inference.neutral.request import Claims, ClientRequest, ToolOffer
from inference.neutral.types import (
    Block,
    Message,
    Part,
    PassThrough,
    Sampling,
    ToolCall,
    ToolChoice,
    ToolSpec,
)
from inference.neutral.wellformed import reject_lone_surrogates

THINKING_BLOCKS = ("thinking", "redacted_thinking")
# A thinking budget as the effort other providers take (the smallest one that covers it).
_EFFORTS = ((1024, "low"), (4096, "medium"))
_CHOICES = {"auto": "auto", "any": "required", "none": "none", "tool": "required"}


def from_messages(
    body: MessagesIn,
    header_user: str | None = None,
    bound_user: str | None = None,
    beta: str | None = None,
    max_tools: int = LimitsConfig().max_tools,
) -> ClientRequest:
    """``beta``: the client's ``anthropic-beta`` header. ``metadata.user_id`` names the
    user only after a key, a bound principal and ``X-User-Id`` (Claude Code fills it on
    its own)."""
    reject_lone_surrogates(body.model_dump(exclude_none=True))
    system, system_cache, messages = read_conversation(body)
    read, dropped = read_tools(body.tools or [], max_tools)
    tools = read.checked()
    metadata = body.metadata or {}
    choice = body.tool_choice or {}
    return ClientRequest(
        model=body.model,
        system=tuple(system),
        messages=tuple(messages),
        claims=Claims(
            header_user=header_user,
            bound_user=bound_user,
            client_label=_labelled_user(metadata.get("user_id")),
        ),
        tools=ToolOffer(
            tools,
            _tool_choice(body.tool_choice, tools),
            False
            if readers.optional_flag(choice, "disable_parallel_tool_use", "tool_choice")
            else None,
            dropped,
            tuple(read.schema_params),
        ),
        sampling=_sampling(body, beta),
        metadata={
            key: value
            for key, value in metadata.items()
            if key != "user_id" and isinstance(value, str)
        },
        stream=body.stream,
        include_usage=True,
        system_cache_control=system_cache,
    )


def from_count_tokens(
    body: CountTokensIn, max_tools: int = LimitsConfig().max_tools
) -> ClientRequest:
    """What ``count_tokens`` counts (the system, the conversation and the tools), read as
    ``/v1/messages`` reads them."""
    reject_lone_surrogates(body.model_dump(exclude_none=True))
    system, _, messages = read_conversation(body)
    read, _ = read_tools(body.tools or [], max_tools)
    tools = read.checked()
    return ClientRequest(
        model=body.model,
        system=tuple(system),
        messages=tuple(messages),
        tools=ToolOffer(
            tools, _tool_choice(body.tool_choice, tools), schema_params=tuple(read.schema_params)
        ),
    )


def _labelled_user(user_id: Any) -> str | None:
    """``metadata.user_id``: a user id, or Claude Code's JSON of its session
    (``{"device_id", "account_uuid", "session_id"}``), which means its account when it
    has one, else its device, so one person's sessions are one user."""
    if not isinstance(user_id, str):
        return None
    try:
        session = json.loads(user_id)
    except ValueError:
        return user_id
    if not isinstance(session, dict):
        return user_id
    for name in ("account_uuid", "device_id"):
        if isinstance(session.get(name), str) and session[name].strip():
            return str(session[name])
    return user_id


def read_conversation(
    body: CountTokensIn,
) -> tuple[list[str], dict[str, Any] | None, list[Message]]:
    """(system texts, the system's cache breakpoint, messages). ``system`` messages
    inside ``messages`` (Claude Code sends one) join the system prompt."""
    system: list[str] = []
    breakpoints: list[dict[str, Any]] = []
    if body.system is not None:
        blocks = _blocks(body.system, "system")
        system.append(_text(blocks, "system"))
        breakpoints += [block["cache_control"] for block in blocks if block.get("cache_control")]
    messages: list[Message] = []
    calls: dict[str, str] = {}  # tool_use id → tool name
    for index, message in enumerate(body.messages):
        where = f"messages[{index}]"
        role = message.get("role") if isinstance(message, dict) else None
        blocks = _blocks(message.get("content") if isinstance(message, dict) else None, where)
        if role == "system":
            system.append(_text(blocks, f"{where}.content"))
        elif role == "user":
            messages += _user_turn(blocks, f"{where}.content", calls)
        elif role == "assistant":
            messages.append(_assistant_turn(blocks, f"{where}.content", calls))
        else:
            raise invalid_request(
                f"{where}.role must be 'user' or 'assistant', got {role!r}",
                param=f"{where}.role",
                code="invalid_message",
            )
    return system, (breakpoints[-1] if breakpoints else None), messages


def read_tools(tools: list[dict[str, Any]], limit: int) -> tuple[readers.ToolList, tuple[str, ...]]:
    """Client tools (``name``, ``description``, ``input_schema``); Anthropic's server and
    built-in tools (a ``type`` other than ``custom``) are left out and named."""
    readers.bounded_tools(len(tools), limit)
    read = readers.ToolList(limit)
    dropped: list[str] = []
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        kind = tool.get("type")
        if kind not in (None, "custom"):
            dropped.append(str(tool.get("name") or kind))
            continue
        function = {
            "name": tool.get("name"),
            "description": tool.get("description") or "",
            "parameters": tool.get("input_schema"),
        }
        read.add(function, where, f"{where}.input_schema")
    return read, tuple(dropped)


def _user_turn(blocks: list[dict[str, Any]], where: str, calls: dict[str, str]) -> list[Message]:
    """Tool results first (as Anthropic orders them), then the user's own parts."""
    messages: list[Message] = []
    parts: list[Part] = []
    breakpoint_: dict[str, Any] | None = None
    for position, block in enumerate(blocks):
        place = f"{where}[{position}]"
        kind = block.get("type")
        if kind == "tool_result":
            messages.append(_tool_result(block, place, calls))
        elif kind == "text" and block.get("cache_control"):
            parts.append(Block(block, readers.optional_string(block, "text", place) or ""))
        elif kind == "text":
            parts.append(readers.optional_string(block, "text", place) or "")
        elif kind == "image":
            parts.append(_image(block, place))
            breakpoint_ = block.get("cache_control") or breakpoint_
        elif kind == "document":
            parts.append(_document(block, place))
        else:
            raise readers.unsupported_part(kind, place, "text, image, document and tool_result")
    if parts:
        messages.append(readers.user_message(parts, breakpoint_))
    return messages


def _tool_result(block: dict[str, Any], where: str, calls: dict[str, str]) -> Message:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str) or call_id not in calls:
        raise invalid_request(
            f"{where}.tool_use_id: {call_id!r} answers no tool_use block of an earlier "
            "assistant message",
            param=f"{where}.tool_use_id",
            code="unknown_tool_call",
        )
    content = block.get("content")
    if content is None or isinstance(content, list):
        content = "".join(
            readers.optional_string(part, "text", f"{where}.content[{position}]") or ""
            if part.get("type") == "text"
            else "[image]"
            for position, part in enumerate(_blocks(content or [], f"{where}.content"))
        )
    elif not isinstance(content, str):
        raise readers.wrong_type(f"{where}.content", "a string or a list of content blocks")
    return Message(
        role="tool",
        content=content,
        tool_call_id=call_id,
        name=calls[call_id],
        cache_control=block.get("cache_control"),
        failed=readers.optional_flag(block, "is_error", where),
    )


def _assistant_turn(blocks: list[dict[str, Any]], where: str, calls: dict[str, str]) -> Message:
    texts: list[str] = []
    made: list[ToolCall] = []
    reasoning: list[dict[str, Any]] = []
    for position, block in enumerate(blocks):
        kind = block.get("type")
        if kind == "text":
            texts.append(readers.optional_string(block, "text", f"{where}[{position}]") or "")
        elif kind == "tool_use":
            place = f"{where}[{position}]"
            call = ToolCall(
                id=readers.required_string(block, "id", place),
                name=readers.required_string(block, "name", place),
                arguments=json.dumps(block.get("input") or {}),
            )
            calls[call.id] = call.name
            made.append(call)
        elif kind in THINKING_BLOCKS:
            reasoning.append(block)
        else:
            raise readers.unsupported_part(
                kind, f"{where}[{position}]", "text, tool_use, thinking and redacted_thinking"
            )
    marked = [block["cache_control"] for block in blocks if block.get("cache_control")]
    return Message(
        role="assistant",
        content="".join(texts),
        tool_calls=tuple(made),
        reasoning=tuple(reasoning),
        cache_control=marked[-1] if marked else None,
    )


def _blocks(content: Any, where: str) -> list[dict[str, Any]]:
    if isinstance(content, str):
        return [{"type": "text", "text": content}]
    if not isinstance(content, list) or not all(isinstance(block, dict) for block in content):
        raise invalid_request(
            f"{where} must be a string or a list of content blocks",
            param=where,
            code="invalid_content",
        )
    return content


def _text(blocks: list[dict[str, Any]], where: str) -> str:
    texts = []
    for position, block in enumerate(blocks):
        if block.get("type") != "text":
            raise readers.unsupported_part(block.get("type"), f"{where}[{position}]", "text")
        texts.append(readers.optional_string(block, "text", f"{where}[{position}]") or "")
    return "\n\n".join(texts)


def _source(block: dict[str, Any], where: str) -> dict[str, Any]:
    return readers.optional_object(block.get("source"), f"{where}.source") or {}


def _image(block: dict[str, Any], where: str) -> Part:
    source = _source(block, where)
    if source.get("type") == "file":
        return readers.document(source.get("file_id"), None, None, where)
    if source.get("type") == "base64":
        media_type = readers.required_string(source, "media_type", f"{where}.source")
        data = readers.required_string(source, "data", f"{where}.source")
        return readers.image(f"data:{media_type};base64,{data}", where)
    if source.get("type") == "url" and isinstance(source.get("url"), str):
        return readers.image(source["url"], where)
    raise invalid_request(
        f"{where}.source must be a base64 or url image source",
        param=f"{where}.source",
        code="invalid_image",
    )


def _document(block: dict[str, Any], where: str) -> Part:
    """A ``file`` source (a gateway file id) or a base64 PDF is a document every provider
    gets (its text where it takes no documents); a ``text`` or ``url`` document goes to
    Anthropic as sent, and others get a text one's text (``[document]`` for a URL)."""
    source = _source(block, where)
    title = readers.optional_string(block, "title", where)
    if source.get("type") == "file":
        return readers.document(source.get("file_id"), None, title, where, block=block)
    if source.get("type") == "base64":
        place = f"{where}.source"
        media_type = readers.optional_string(source, "media_type", place) or "application/pdf"
        uri = f"data:{media_type};base64,{readers.optional_string(source, 'data', place) or ''}"
        return readers.document(None, uri, title or "document.pdf", where, block=block)
    data = source.get("data")
    return Block(
        block, data if source.get("type") == "text" and isinstance(data, str) else "[document]"
    )


def _tool_choice(choice: dict[str, Any] | None, tools: tuple[ToolSpec, ...]) -> ToolChoice | None:
    """``{type: auto|any|none}``, or ``{type: tool, name}``."""
    if choice is None:
        return None
    kind = choice.get("type")
    if not isinstance(kind, str) or kind not in _CHOICES:
        raise readers.invalid_tool_choice("tool_choice.type", "auto, any, tool or none")
    name = choice.get("name") if kind == "tool" else None
    if kind == "tool" and not isinstance(name, str):
        raise readers.invalid_tool_choice(
            "tool_choice.name", "the name of one of the request's tools"
        )
    return readers.chosen_tool(_CHOICES[kind], name, tools, "tool_choice")  # type: ignore[arg-type]


def _sampling(body: MessagesIn, beta: str | None) -> Sampling:
    """Anthropic's parameters under the neutral names; ``thinking`` and the fields the
    gateway does not model go to Anthropic upstreams as they came, and ``thinking``'s
    budget becomes a reasoning effort for the others."""
    extras = dict(body.model_extra or {})
    if body.thinking is not None:
        extras["thinking"] = body.thinking
    return Sampling(
        temperature=body.temperature,
        top_p=body.top_p,
        top_k=body.top_k,
        max_tokens=body.max_tokens,
        stop=tuple(body.stop_sequences or ()),
        reasoning_effort=_effort(body.thinking),
        passthrough=PassThrough("anthropic", extras, {"anthropic-beta": beta} if beta else {}),
    )


def _effort(thinking: dict[str, Any] | None) -> str | None:
    if thinking is None or thinking.get("type") != "enabled":
        return "none" if thinking is not None and thinking.get("type") == "disabled" else None
    budget = thinking.get("budget_tokens")
    if not isinstance(budget, int):
        return "medium"
    return next((effort for limit, effort in _EFFORTS if budget <= limit), "high")
