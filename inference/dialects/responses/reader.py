"""A ``POST /v1/responses`` body in the gateway's neutral terms (docs/responses.md).

``input`` carries the conversation (messages, the model's function calls, their outputs),
after the items of a ``previous_response_id`` chain when there is one (the view reads
them). Built-in tools the gateway cannot run are left out and named; a ``namespace`` tool
is its function tools, whose calls go back under the namespace. Anything else the
gateway cannot serve is a 400 naming the field.
"""

import uuid
from dataclasses import dataclass, replace
from typing import Any

from agents.schema import LimitsConfig
from inference.dialects.responses.body import ResponsesIn
from inference.dialects.responses.reply import reasoning_block
from inference.neutral import readers
from inference.neutral.body import MAX_MESSAGES
from inference.neutral.errors import invalid_request
from inference.neutral.request import Claims, ClientRequest, ToolOffer
from inference.neutral.types import (
    THINKING_BUDGETS,
    Message,
    Part,
    PassThrough,
    ResponseFormat,
    Sampling,
    ToolCall,
)
from inference.neutral.wellformed import reject_lone_surrogates

REASONING_EFFORTS = tuple(THINKING_BUDGETS)  # what every provider kind can be given
# Built-in tools of OpenAI's that run on its servers: left out of what the model sees.
BUILT_IN_TOOLS = frozenset(
    (
        "web_search",
        "web_search_preview",
        "file_search",
        "code_interpreter",
        "computer_use_preview",
        "image_generation",
        "local_shell",
    )
)
# What the gateway does not serve, and what to do instead.
_UNSERVED = (
    ("conversation", "use previous_response_id, or send the conversation in input"),
    ("prompt", "send the instructions and input themselves (no prompts are stored)"),
    ("background", "the gateway answers in the foreground only"),
)
_ITEM_PREFIXES = {"message": "msg", "function_call": "fc", "function_call_output": "fco"}


@dataclass(frozen=True)
class ResponsesRequest:
    """A Responses body read: the neutral request, and what its reply and its stored
    copy need of it."""

    client: ClientRequest
    input_items: list[dict[str, Any]]  # this request's input, as it is stored and listed
    namespaces: dict[str, str]  # function name → the namespace tool it came in


def from_responses(
    body: ResponsesIn,
    header_user: str | None = None,
    bound_user: str | None = None,
    earlier: list[dict[str, Any]] | None = None,
    max_tools: int = LimitsConfig().max_tools,
) -> ResponsesRequest:
    """``earlier``: the items of the ``previous_response_id`` chain, oldest first."""
    reject_lone_surrogates(body.model_dump(exclude_none=True))
    if isinstance(body.input, list) and len(body.input) > MAX_MESSAGES:
        raise invalid_request(
            f"input must have at most {MAX_MESSAGES} items, got {len(body.input)}",
            param="input",
            code="too_many_items",
        )
    for name, instead in _UNSERVED:
        if getattr(body, name) not in (None, False):
            raise invalid_request(
                f"{name} is not supported: {instead}", param=name, code="unsupported_parameter"
            )
    items = stored_items(body.input)
    system, messages = _conversation([*(earlier or []), *items], len(earlier or []))
    if body.instructions:
        system.insert(0, body.instructions)
    read, namespaces, dropped = _tools(body.tools or [], max_tools)
    tools = read.checked()
    client = ClientRequest(
        model=body.model,
        system=tuple(system),
        messages=tuple(messages),
        claims=Claims(body.safety_identifier, body.user, header_user, bound_user),
        tools=ToolOffer(
            tools,
            readers.function_choice(body.tool_choice, tools, "tool_choice"),
            body.parallel_tool_calls,
            dropped,
            tuple(read.schema_params),
        ),
        sampling=_sampling(body),
        response_format=_text_format(body.text),
        metadata=body.metadata,
        stream=body.stream,
        include_usage=True,
        conversation_param="input",
        chained=earlier is not None,
    )
    return ResponsesRequest(client, items, namespaces)


def stored_items(content: str | list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``input`` as items with ids, as a stored response lists them: a string is one user
    message; a message's string content is one text part."""
    items = [{"role": "user", "content": content}] if isinstance(content, str) else content
    stored = []
    for index, given in enumerate(items):
        kind = readers.optional_string(given, "type", f"input[{index}]") or "message"
        item: dict[str, Any] = {"type": kind, **given}
        text = item.get("content")
        if kind == "message" and isinstance(text, str):
            part = "output_text" if item.get("role") == "assistant" else "input_text"
            item["content"] = [{"type": part, "text": text}]
        if "id" not in item and kind in _ITEM_PREFIXES:
            item["id"] = f"{_ITEM_PREFIXES[kind]}_{uuid.uuid4().hex}"
        stored.append(item)
    return stored


def _sampling(body: ResponsesIn) -> Sampling:
    """The Responses parameters under their chat names: ``max_output_tokens`` is a
    completion limit (``max_completion_tokens``: reasoning models refuse ``max_tokens``),
    ``reasoning.effort`` is ``reasoning_effort``, ``text.verbosity`` is ``verbosity``, and
    ``top_logprobs`` asks for ``logprobs``."""
    extras = {
        name: value
        for name, value in (
            ("service_tier", body.service_tier),
            ("verbosity", (body.text or {}).get("verbosity")),
        )
        if value is not None
    }
    effort = (body.reasoning or {}).get("effort")
    if effort is not None and effort not in REASONING_EFFORTS:
        raise invalid_request(
            f"reasoning.effort must be one of {', '.join(REASONING_EFFORTS)}, got {effort!r}",
            param="reasoning.effort",
            code="unsupported_value",
        )
    return Sampling(
        temperature=body.temperature,
        top_p=body.top_p,
        max_tokens=body.max_output_tokens,
        max_tokens_name="max_completion_tokens",
        reasoning_effort=effort,
        logprobs=True if body.top_logprobs is not None else None,
        top_logprobs=body.top_logprobs,
        passthrough=PassThrough("openai", extras),
    )


def _conversation(items: list[dict[str, Any]], earlier: int = 0) -> tuple[list[str], list[Message]]:
    """(system texts, messages) of ``input`` items after ``earlier`` items of a stored
    chain, each function call joined to the assistant turn it belongs to, each output
    checked against a call. A reasoning item the gateway made goes back with the
    assistant turn after it; any other is left out."""
    system: list[str] = []
    messages: list[Message] = []
    calls: dict[str, str] = {}  # call id → function name
    reasoning: list[dict[str, Any]] = []  # for the next assistant turn
    for index, item in enumerate(items):
        where = f"input[{index - earlier}]"
        if not isinstance(item, dict):
            raise invalid_request(f"{where} must be an object", param=where, code="invalid_item")
        kind = item.get("type", "message")
        if kind == "message":
            role = item.get("role")
            content = item.get("content")
            if role in readers.SYSTEM_ROLES:
                system.append(_text(content, f"{where}.content", role))
            elif role == "user":
                messages.append(readers.user_message(_user_parts(content, where)))
            elif role == "assistant":
                text = _text(content, f"{where}.content", role)
                messages.append(Message(role="assistant", content=text, reasoning=tuple(reasoning)))
                reasoning = []
            else:
                raise invalid_request(
                    f"{where}.role must be user, assistant, system or developer, got {role!r}",
                    param=f"{where}.role",
                    code="invalid_item",
                )
        elif kind == "function_call":
            call = ToolCall(
                id=readers.required_string(item, "call_id", where),
                name=readers.required_string(item, "name", where),
                arguments=_arguments(item.get("arguments"), f"{where}.arguments"),
            )
            calls[call.id] = call.name
            last = messages[-1] if messages else None
            if last is not None and last.role == "assistant":
                messages[-1] = replace(
                    last,
                    tool_calls=(*last.tool_calls, call),
                    reasoning=(*last.reasoning, *reasoning),
                )
            else:
                messages.append(
                    Message(
                        role="assistant", content="", tool_calls=(call,), reasoning=tuple(reasoning)
                    )
                )
            reasoning = []
        elif kind == "function_call_output":
            call_id = readers.required_string(item, "call_id", where)
            if call_id not in calls:
                raise invalid_request(
                    f"{where}.call_id: {call_id!r} answers no function_call item before it",
                    param=f"{where}.call_id",
                    code="unknown_tool_call",
                )
            output = _text(item.get("output"), f"{where}.output", "function_call_output")
            messages.append(
                Message(role="tool", content=output, tool_call_id=call_id, name=calls[call_id])
            )
        elif kind == "reasoning":
            if (block := reasoning_block(item)) is not None:
                reasoning.append(block)
        else:
            raise invalid_request(
                f"{where}.type: items of type {kind!r} are not supported (message, "
                "function_call and function_call_output are)",
                param=f"{where}.type",
                code="unsupported_item",
            )
    return system, messages


def _user_parts(content: Any, where: str) -> list[Part]:
    if isinstance(content, str):
        return [content]
    if not isinstance(content, list):
        raise invalid_request(
            f"{where}.content must be a string or a list of parts",
            param=f"{where}.content",
            code="invalid_item",
        )
    parts: list[Part] = []
    for position, part in enumerate(content):
        place = f"{where}.content[{position}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind == "input_text":
            parts.append(readers.optional_string(part, "text", place) or "")
        elif kind == "input_image" and isinstance(part.get("image_url"), str):
            parts.append(readers.image(part["image_url"], f"{place}.image_url"))
        elif kind == "input_image" and isinstance(part.get("file_id"), str):
            parts.append(readers.document(part["file_id"], None, None, place))
        elif kind == "input_file":
            file_id, data = part.get("file_id"), part.get("file_data")
            parts.append(readers.document(file_id, data, part.get("filename"), place))
        else:
            raise readers.unsupported_part(
                kind, place, "input_text, input_image (image_url or file_id) and input_file"
            )
    return parts


def _text(content: Any, where: str, role: str) -> str:
    """The text of a string, or of text parts (input_text, output_text): only user
    messages may carry images."""
    if content is None or isinstance(content, str):
        return content or ""
    if not isinstance(content, list):
        raise invalid_request(
            f"{where} must be a string or a list of text parts", param=where, code="invalid_item"
        )
    texts = []
    for position, part in enumerate(content):
        place = f"{where}[{position}]"
        kind = part.get("type") if isinstance(part, dict) else None
        if kind not in ("input_text", "output_text", "text", "refusal"):
            raise readers.unsupported_part(
                kind, place, f"text in {role} items; images only in user messages"
            )
        texts.append(
            readers.optional_string(part, "refusal" if kind == "refusal" else "text", place) or ""
        )
    return "".join(texts)


def _arguments(value: Any, where: str) -> str:
    """A function call's arguments: JSON text, as the model wrote it (not an object)."""
    if value is None or value == "":
        return "{}"
    if not isinstance(value, str):
        raise invalid_request(
            f"{where} must be a string of JSON, got {type(value).__name__}",
            param=where,
            code="invalid_item",
        )
    return value


def _tools(
    tools: list[dict[str, Any]], limit: int
) -> tuple[readers.ToolList, dict[str, str], tuple[str, ...]]:
    """(the function tools, namespace of each one that came in a namespace tool, the
    built-in tool types left out). Only built-in tools is a 400: nothing would be left
    of what the client offered."""
    readers.bounded_tools(len(tools), limit)
    read = readers.ToolList(limit)
    namespaces: dict[str, str] = {}
    dropped: list[str] = []
    for index, tool in enumerate(tools):
        where = f"tools[{index}]"
        kind = tool.get("type") if isinstance(tool, dict) else None
        if kind == "function":
            read.add(tool, where)
        elif kind == "namespace":
            namespace = readers.required_string(tool, "name", where)
            members = readers.optional_list(tool.get("tools"), f"{where}.tools")
            for position, member in enumerate(members):
                place = f"{where}.tools[{position}]"
                if not isinstance(member, dict) or member.get("type") != "function":
                    raise invalid_request(
                        f"{place}.type must be 'function' (a namespace groups function tools)",
                        param=f"{place}.type",
                        code="unsupported_tool_type",
                    )
                namespaces[read.add(member, place).name] = namespace
        elif isinstance(kind, str) and kind in BUILT_IN_TOOLS:
            dropped.append(str(kind))
        else:
            raise invalid_request(
                f"{where}.type must be 'function' or 'namespace' (the gateway runs no "
                f"built-in tools), got {kind!r}",
                param=f"{where}.type",
                code="unsupported_tool_type",
            )
    if dropped and not read.specs:
        raise invalid_request(
            f"tools: the gateway runs no built-in tools ({', '.join(dropped)}); offer "
            "function tools",
            param="tools",
            code="unsupported_tool_type",
        )
    return read, namespaces, tuple(dropped)


def _text_format(text: dict[str, Any] | None) -> ResponseFormat | None:
    """``text.format``: text (nothing to enforce), json_object, or json_schema with its
    ``name``, ``schema`` and ``strict`` beside the type."""
    spec = (text or {}).get("format")
    if spec is None:
        return None
    if not isinstance(spec, dict):
        spec = {"type": None}
    return readers.reply_format(
        spec.get("type"),
        spec.get("schema"),
        spec.get("name"),
        spec.get("strict", False),
        "text.format.type",
        "text.format.schema",
    )
