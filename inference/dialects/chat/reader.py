"""A ``POST /v1/chat/completions`` body in the gateway's neutral terms.

Everything a client can get wrong here is a 400 naming the field: tools of another type
or with a malformed schema, an unknown ``tool_choice``, a tool message that answers no
call.
"""

from typing import Any

from agents.schema import LimitsConfig
from inference.dialects.chat.body import ChatCompletionIn, ChatMessageIn
from inference.neutral import readers
from inference.neutral.errors import invalid_request
from inference.neutral.request import Claims, ClientRequest, ToolOffer
from inference.neutral.types import (
    Block,
    Message,
    Part,
    PassThrough,
    ResponseFormat,
    Sampling,
    ToolCall,
)
from inference.neutral.wellformed import reject_lone_surrogates


def from_chat_completion(
    body: ChatCompletionIn,
    header_user: str | None = None,
    bound_user: str | None = None,
    max_tools: int = LimitsConfig().max_tools,
) -> ClientRequest:
    reject_lone_surrogates(body.model_dump(exclude_none=True))
    if body.n is not None and body.n != 1:
        raise invalid_request(
            "n must be 1: the gateway answers one choice per request (history and budgets "
            "count turns)",
            param="n",
            code="unsupported_parameter",
        )
    read = _function_tools(body.tools or [], max_tools)
    tools = read.checked()
    return ClientRequest(
        model=body.model,
        system=tuple(
            message.text for message in body.messages if message.role in readers.SYSTEM_ROLES
        ),
        messages=tuple(_conversation(body.messages)),
        claims=Claims(body.safety_identifier, body.user, header_user, bound_user),
        tools=ToolOffer(
            tools,
            readers.function_choice(body.tool_choice, tools, "tool_choice"),
            body.parallel_tool_calls,
            schema_params=tuple(read.schema_params),
        ),
        sampling=_sampling(body),
        response_format=_response_format(body.response_format),
        metadata=body.metadata,
        stream=body.stream,
        include_usage=bool(body.stream_options and body.stream_options.include_usage),
        system_cache_control=next(
            (
                m.breakpoint
                for m in body.messages
                if m.role in readers.SYSTEM_ROLES and m.breakpoint
            ),
            None,
        ),
    )


def _function_tools(tools: list[dict[str, Any]], limit: int) -> readers.ToolList:
    """Chat-completions tools (``{type: function, function: {name, description,
    parameters}}``) as neutral specs."""
    readers.bounded_tools(len(tools), limit)
    read = readers.ToolList(limit)
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
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
        read.add(function, f"{where}.function")
    return read


def _response_format(raw: dict[str, Any] | None) -> ResponseFormat | None:
    """``{type: json_schema, json_schema: {name, schema, strict}}`` (a bare schema under
    ``json_schema`` is accepted too), ``json_object`` or ``text``."""
    if raw is None:
        return None
    kind = raw.get("type")
    wrapper = raw.get("json_schema")
    if kind != "json_schema":
        return readers.reply_format(kind, None, None, None, "response_format.type", "")
    if not isinstance(wrapper, dict):
        raise invalid_request(
            "response_format.json_schema must be an object holding the JSON Schema",
            param="response_format.json_schema",
            code="invalid_response_format",
        )
    if isinstance(wrapper.get("schema"), dict):
        return readers.reply_format(
            kind,
            wrapper["schema"],
            wrapper.get("name"),
            wrapper.get("strict"),
            "response_format.type",
            "response_format.json_schema.schema",
        )
    return readers.reply_format(
        kind, wrapper, None, None, "response_format.type", "response_format.json_schema"
    )


def _conversation(messages: list[ChatMessageIn]) -> list[Message]:
    """Neutral messages, checking that each tool message answers a call made before it."""
    calls: dict[str, str] = {}  # call id → tool name
    converted: list[Message] = []
    for index, message in enumerate(messages):
        if message.role != "user":
            _check_text_only(message, index)
        if message.role in readers.SYSTEM_ROLES:
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
            raise readers.unsupported_part(
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
            parts.append(readers.image(part.image_url.url, f"{where}.image_url.url"))
        elif part.type == "file" and part.file is not None:
            file = part.file
            parts.append(
                readers.document(
                    file.get("file_id"), file.get("file_data"), file.get("filename"), where
                )
            )
        else:
            raise readers.unsupported_part(part.type, where, "text, image_url and file")
    return readers.user_message(parts, message.cache_control)


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
        passthrough=PassThrough("openai", extras),
    )
