"""What a client asked for, in the gateway's neutral terms, whatever API it spoke.

``from_chat_completion`` reads a ``POST /v1/chat/completions`` body. Everything a client
can get wrong here is a 400 naming the field: tools of another type or with a
malformed schema, an unknown ``tool_choice``, a tool message that answers no call.
"""

from dataclasses import dataclass, field
from typing import Any

from inference.errors import invalid_request
from inference.providers.types import (
    Message,
    ResponseFormat,
    Sampling,
    ToolCall,
    ToolChoice,
    ToolSpec,
)
from inference.schemas import ChatCompletionIn, ChatMessageIn
from inference.structured import check_json_schema, parse_response_format

SYSTEM_ROLES = ("system", "developer")


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
    stream: bool = False
    include_usage: bool = False


def from_chat_completion(body: ChatCompletionIn) -> ClientRequest:
    tools = function_tools(body.tools or [], "tools")
    return ClientRequest(
        model=body.model,
        system=tuple(message.text for message in body.messages if message.role in SYSTEM_ROLES),
        messages=tuple(_conversation(body.messages)),
        user_text=_last_user_text(body.messages),
        manages_history=any(message.role == "assistant" for message in body.messages),
        tools=tools,
        tool_choice=tool_choice(body.tool_choice, tools, "tool_choice"),
        parallel_tool_calls=body.parallel_tool_calls,
        sampling=_sampling(body),
        response_format=parse_response_format(body.response_format),
        metadata=body.metadata,
        safety_identifier=body.safety_identifier,
        user=body.user,
        stream=body.stream,
        include_usage=bool(body.stream_options and body.stream_options.include_usage),
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
        if message.role in SYSTEM_ROLES:
            continue
        if message.role == "assistant":
            made = tuple(
                ToolCall(id=call.id, name=call.function.name, arguments=call.function.arguments)
                for call in message.tool_calls or []
            )
            calls.update((call.id, call.name) for call in made)
            converted.append(Message(role="assistant", content=message.text, tool_calls=made))
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
                    role="tool", content=message.text, tool_call_id=call_id, name=calls[call_id]
                )
            )
        else:
            converted.append(Message(role="user", content=message.text))
    return converted


def _last_user_text(messages: list[ChatMessageIn]) -> str | None:
    for message in reversed(messages):
        if message.role == "user":
            return message.text
    return None


def _sampling(body: ChatCompletionIn) -> Sampling:
    stop = (body.stop,) if isinstance(body.stop, str) else tuple(body.stop or ())
    return Sampling(
        temperature=body.temperature,
        top_p=body.top_p,
        max_tokens=body.max_completion_tokens or body.max_tokens,
        stop=stop,
        seed=body.seed,
    )
