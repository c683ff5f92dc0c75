"""What a client asked for, in the gateway's neutral terms, whatever API it spoke.

``from_chat_completion`` reads a ``POST /v1/chat/completions`` body. Everything a client
can get wrong here is a 400 naming the field: tools of another type or with a
malformed schema, an unknown ``tool_choice``, a tool message that answers no call.
"""

import re
from dataclasses import dataclass, field
from typing import Any

from inference.errors import invalid_request
from inference.providers.types import (
    Block,
    Image,
    Message,
    Part,
    ResponseFormat,
    Sampling,
    ToolCall,
    ToolChoice,
    ToolSpec,
)
from inference.structured.response_format import check_json_schema, parse_response_format
from inference.wire.chat_body import ChatCompletionIn, ChatMessageIn
from inference.wire.wellformed import reject_lone_surrogates

SYSTEM_ROLES = ("system", "developer")
_DATA_IMAGE = re.compile(r"data:image/[A-Za-z0-9.+-]+;base64,")


@dataclass(frozen=True)
class ClientRequest:
    model: str
    system: tuple[str, ...]  # the request's own system (and developer) messages
    messages: tuple[Message, ...]  # the conversation, system messages left out
    user_text: str | None  # the text of the last user message
    manages_history: bool  # the request carries assistant turns of its own
    tools: tuple[ToolSpec, ...] = ()
    tool_choice: ToolChoice | None = None
    parallel_tool_calls: bool | None = None
    sampling: Sampling = field(default_factory=Sampling)
    response_format: ResponseFormat | None = None
    metadata: dict[str, str] | None = None
    safety_identifier: str | None = None
    user: str | None = None
    header_user: str | None = None  # X-User-Id, for clients that cannot set body fields
    bound_user: str | None = None  # the authenticated principal, with auth.proxy.bind_user
    stream: bool = False
    include_usage: bool = False
    conversation_param: str = "messages"  # the field that carries the conversation
    # Anthropic's prompt-cache breakpoint the client put on its system part.
    system_cache_control: dict[str, Any] | None = None


def from_chat_completion(
    body: ChatCompletionIn, header_user: str | None = None, bound_user: str | None = None
) -> ClientRequest:
    reject_lone_surrogates(body.model_dump(exclude_none=True))
    if body.n is not None and body.n != 1:
        raise invalid_request(
            "n must be 1: the gateway answers one choice per request (history and budgets "
            "count turns)",
            param="n",
            code="unsupported_parameter",
        )
    tools = function_tools(body.tools or [], "tools")
    messages = tuple(_conversation(body.messages))
    return ClientRequest(
        model=body.model,
        system=tuple(message.text for message in body.messages if message.role in SYSTEM_ROLES),
        messages=messages,
        user_text=_last_user_text(list(messages)),
        manages_history=any(message.role == "assistant" for message in body.messages),
        tools=tools,
        tool_choice=tool_choice(body.tool_choice, tools, "tool_choice"),
        parallel_tool_calls=body.parallel_tool_calls,
        sampling=_sampling(body),
        response_format=parse_response_format(body.response_format),
        metadata=body.metadata,
        safety_identifier=body.safety_identifier,
        user=body.user,
        header_user=header_user,
        bound_user=bound_user,
        stream=body.stream,
        include_usage=bool(body.stream_options and body.stream_options.include_usage),
        system_cache_control=next(
            (m.breakpoint for m in body.messages if m.role in SYSTEM_ROLES and m.breakpoint),
            None,
        ),
    )


def function_tools(tools: list[dict[str, Any]], param: str) -> tuple[ToolSpec, ...]:
    """Chat-completions tools (``{type: function, function: {name, description,
    parameters}}``) as neutral specs."""
    specs = []
    for index, tool in enumerate(tools):
        where = f"{param}[{index}]"
        if not isinstance(tool, dict) or tool.get("type") != "function":
            kind = tool.get("type") if isinstance(tool, dict) else None
            raise invalid_request(
                f"{where}.type must be 'function' (the gateway runs no built-in tools), "
                f"got {kind!r}",
                param=f"{where}.type",
                code="unsupported_tool_type",
            )
        function = tool.get("function")
        if not isinstance(function, dict):
            raise invalid_request(
                f"{where}.function must be an object",
                param=f"{where}.function",
                code="invalid_tool",
            )
        specs.append(tool_spec(function, f"{where}.function"))
    return checked_names(specs, param)


def tool_spec(function: dict[str, Any], where: str) -> ToolSpec:
    """One function tool (``name``, ``description``, ``parameters``) as a neutral spec."""
    name = function.get("name")
    if not isinstance(name, str) or not name.strip():
        raise invalid_request(
            f"{where}.name must be a non-empty string", param=f"{where}.name", code="invalid_tool"
        )
    description = function.get("description") or ""
    if not isinstance(description, str):
        raise invalid_request(
            f"{where}.description must be a string",
            param=f"{where}.description",
            code="invalid_tool",
        )
    parameters = function.get("parameters")
    if parameters is None:
        parameters = {"type": "object", "properties": {}}
    if not isinstance(parameters, dict):
        raise invalid_request(
            f"{where}.parameters must be a JSON Schema object",
            param=f"{where}.parameters",
            code="invalid_tool",
        )
    if parameters.get("type", "object") != "object":
        raise invalid_request(
            f"{where}.parameters must be a schema of type 'object' (a tool takes named "
            f"arguments), got type {parameters.get('type')!r}",
            param=f"{where}.parameters",
            code="invalid_tool",
        )
    check_json_schema(parameters, f"{where}.parameters", "invalid_tool")
    return ToolSpec(name=name, description=description, parameters=parameters)


def checked_names(specs: list[ToolSpec], param: str) -> tuple[ToolSpec, ...]:
    seen: set[str] = set()
    for spec in specs:
        if spec.name in seen:
            raise invalid_request(
                f"{param}: the tool name '{spec.name}' is given twice",
                param=param,
                code="invalid_tool",
            )
        seen.add(spec.name)
    return tuple(specs)


def tool_choice(
    value: str | dict[str, Any] | None, tools: tuple[ToolSpec, ...], param: str
) -> ToolChoice | None:
    """``none``, ``auto``, ``required`` or a named function of the request's tools."""
    if value is None:
        return None
    if value in ("none", "auto", "required"):
        return ToolChoice(mode=value)  # type: ignore[arg-type]
    name = _named_function(value)
    if name is None:
        raise invalid_request(
            f"{param} must be 'none', 'auto', 'required' or "
            "{'type': 'function', 'function': {'name': ...}}",
            param=param,
            code="invalid_tool_choice",
        )
    if name not in {tool.name for tool in tools}:
        raise invalid_request(
            f"{param} names the function '{name}', which is not one of the request's tools",
            param=param,
            code="invalid_tool_choice",
        )
    return ToolChoice(mode="required", name=name)


def _named_function(value: Any) -> str | None:
    """The name in ``{type: function, function: {name}}`` (chat) or ``{type: function,
    name}`` (Responses)."""
    if not isinstance(value, dict) or value.get("type") != "function":
        return None
    function = value.get("function")
    name = function.get("name") if isinstance(function, dict) else value.get("name")
    return name if isinstance(name, str) else None


def _conversation(messages: list[ChatMessageIn]) -> list[Message]:
    """Neutral messages, checking that each tool message answers a call made before it."""
    calls: dict[str, str] = {}  # call id → tool name
    converted: list[Message] = []
    for index, message in enumerate(messages):
        if message.role != "user":
            _check_text_only(message, index)
        if message.role in SYSTEM_ROLES:
            continue
        if message.role == "assistant":
            made = tuple(
                ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments)
                for call in message.tool_calls or []
            )
            calls.update((call.id, call.name) for call in made)
            converted.append(
                Message(
                    role="assistant",
                    content=message.text,
                    tool_calls=made,
                    cache_control=message.breakpoint,
                )
            )
        elif message.role == "tool":
            call_id = message.tool_call_id
            if call_id not in calls:
                raise invalid_request(
                    f"messages[{index}].tool_call_id: {call_id!r} answers no tool call of an "
                    "earlier assistant message",
                    param=f"messages[{index}].tool_call_id",
                    code="unknown_tool_call",
                )
            converted.append(
                Message(
                    role="tool",
                    content=message.text,
                    tool_call_id=call_id,
                    name=calls[call_id],
                    cache_control=message.breakpoint,
                )
            )
        else:
            converted.append(_user_message(message, index))
    return converted


def _check_text_only(message: ChatMessageIn, index: int) -> None:
    """Only user messages may carry images; other roles' parts must be text (or, on the
    assistant's, a refusal: OpenAI's own replies carry one when the model refused)."""
    allowed = ("text", "refusal") if message.role == "assistant" else ("text",)
    for position, part in enumerate(message.content if isinstance(message.content, list) else []):
        if part.type not in allowed:
            raise unsupported_part(
                part.type,
                f"messages[{index}].content[{position}]",
                f"text in {message.role} messages; images only in user messages",
            )


def _user_message(message: ChatMessageIn, index: int) -> Message:
    """A user message; a text part marked with ``cache_control`` stays its own block at
    an Anthropic upstream."""
    if not isinstance(message.content, list):
        return Message(role="user", content=message.text, cache_control=message.cache_control)
    parts: list[Part] = []
    for position, part in enumerate(message.content):
        where = f"messages[{index}].content[{position}]"
        if part.type == "text" and part.cache_control:
            text = part.text or ""
            block = {"type": "text", "text": text, "cache_control": part.cache_control}
            parts.append(Block(block, text))
        elif part.type == "text":
            parts.append(part.text or "")
        elif part.type == "image_url" and part.image_url is not None:
            parts.append(image(part.image_url.url, f"{where}.image_url.url"))
        else:
            raise unsupported_part(part.type, where, "text and image_url")
    return user_message(parts, message.cache_control)


def user_message(parts: list[Part], cache_control: dict[str, Any] | None = None) -> Message:
    """A user message of parts: its text, and the parts themselves unless all are text."""
    text = "".join(
        part if isinstance(part, str) else part.text if isinstance(part, Block) else ""
        for part in parts
    )
    plain = all(isinstance(part, str) for part in parts)
    return Message(
        role="user",
        content=text,
        parts=() if plain else tuple(parts),
        cache_control=cache_control,
    )


def image(url: str, param: str) -> Image:
    """An image given by https URL or ``data:image/...;base64,`` URI (400 otherwise)."""
    if url.startswith("https://") or _DATA_IMAGE.match(url):
        return Image(url)
    raise invalid_request(
        f"{param} must be an https URL or a data:image/...;base64, URI",
        param=param,
        code="invalid_image_url",
    )


def unsupported_part(kind: str | None, where: str, supported: str) -> Exception:
    return invalid_request(
        f"{where}: content parts of type {kind!r} are not supported (only {supported})",
        param=where,
        code="unsupported_content_part",
    )


def remembered_text(message: Message) -> str:
    """A message's text as history keeps it: ``[image]`` where an image was."""
    if not message.parts:
        return message.content
    return "".join(
        part if isinstance(part, str) else "[image]" if isinstance(part, Image) else part.text
        for part in message.parts
    )


def _last_user_text(messages: list[Message]) -> str | None:
    for message in reversed(messages):
        if message.role == "user":
            return remembered_text(message)
    return None


def _sampling(body: ChatCompletionIn) -> Sampling:
    stop = (body.stop,) if isinstance(body.stop, str) else tuple(body.stop or ())
    extras = {
        name: value
        for name in ("logit_bias", "service_tier", "verbosity", "prediction", "modalities")
        if (value := getattr(body, name)) is not None
    }
    completion_limit = body.max_completion_tokens is not None
    return Sampling(
        temperature=body.temperature,
        top_p=body.top_p,
        max_tokens=body.max_completion_tokens if completion_limit else body.max_tokens,
        max_tokens_name="max_completion_tokens" if completion_limit else "max_tokens",
        stop=stop,
        seed=body.seed,
        frequency_penalty=body.frequency_penalty,
        presence_penalty=body.presence_penalty,
        reasoning_effort=body.reasoning_effort,
        logprobs=body.logprobs,
        top_logprobs=body.top_logprobs,
        openai_extras=extras,
    )
