"""A Gemini ``generateContent`` body in the gateway's neutral terms (docs/gemini.md).

``contents`` are ``user`` and ``model`` turns of parts: text, inline images, the model's
``functionCall``s (with ``args`` objects and thought signatures) and the client's
``functionResponse``s. Function declarations may give ``parameters`` in Gemini's schema
dialect or ``parametersJsonSchema``; built-in tools (Google Search, code execution, URL
context…) are left out and named. ``thinkingConfig`` and ``safetySettings`` ride along for
Gemini upstreams only. Anything else the gateway cannot serve, and any field of another
JSON type than Gemini's (no coercion: ``stopSequences: "STOP"`` is not a list), is a 400
naming the field.
"""

import json
import math
import mimetypes
import uuid
from dataclasses import dataclass, field
from typing import Any

from agents.schema import LimitsConfig
from inference.dialects.gemini.body import Content, CountTokensIn, GenerateContentIn, Generation
from inference.dialects.gemini.schema import json_schema, lower_case_types
from inference.neutral import readers
from inference.neutral.errors import ApiError, invalid_request
from inference.neutral.request import Claims, ClientRequest, ToolOffer
from inference.neutral.types import (
    Message,
    Part,
    PassThrough,
    ResponseFormat,
    Sampling,
    ToolCall,
    ToolChoice,
    ToolSpec,
)
from inference.neutral.wellformed import reject_lone_surrogates

_CALLING_MODES = {"AUTO": "auto", "VALIDATED": "auto", "ANY": "required", "NONE": "none"}
# A thinking budget as the effort other providers take (the smallest one that covers it).
_EFFORTS = ((1024, "low"), (4096, "medium"))


@dataclass(frozen=True)
class Conversation:
    """``systemInstruction`` and ``contents``, read."""

    system: tuple[str, ...]
    messages: tuple[Message, ...]


def from_generate_content(
    body: GenerateContentIn,
    model: str,
    claims: Claims,
    stream: bool,
    max_tools: int = LimitsConfig().max_tools,
) -> ClientRequest:
    return _generation(body, body.contents, model, claims, stream, max_tools)


def from_count_tokens(
    body: CountTokensIn, model: str, max_tools: int = LimitsConfig().max_tools
) -> ClientRequest:
    """What ``countTokens`` counts, read as ``generateContent`` reads it (what one refuses,
    the other does): its ``generateContentRequest``, else its own ``contents``."""
    whole = body.generate_content_request
    if whole is not None:
        try:
            return from_generate_content(whole, model, Claims(), False, max_tools)
        except ApiError as error:
            raise _within("generateContentRequest", error) from None
    if not body.contents:
        raise invalid_request(
            "contents (or generateContentRequest) is required", param="contents", code="missing"
        )
    return _generation(body, body.contents, model, Claims(), False, max_tools)


def _generation(
    body: Generation,
    contents: list[Content],
    model: str,
    claims: Claims,
    stream: bool,
    max_tools: int,
) -> ClientRequest:
    reject_lone_surrogates(body.model_dump(by_alias=True, exclude_none=True))
    conversation = read_conversation(contents, body.system_instruction)
    read, dropped = read_tools(body.tools or [], max_tools)
    tools = read.checked()
    config = camel_case(body.generation_config or {})
    return ClientRequest(
        model=model,
        system=conversation.system,
        messages=conversation.messages,
        claims=claims,
        tools=ToolOffer(
            tools,
            _tool_choice(body.tool_config, tools),
            None,
            dropped,
            tuple(read.schema_params),
        ),
        sampling=_sampling(config, body.safety_settings),
        response_format=_response_format(config),
        stream=stream,
        include_usage=True,
        conversation_param="contents",
    )


def read_conversation(contents: list[Content], system: Content | None) -> Conversation:
    """The system texts and the messages of ``contents``: each ``functionResponse``
    answers a call of an earlier ``model`` turn, by id, else the first unanswered call of
    that name."""
    instruction = _text(system.parts, "systemInstruction.parts") if system is not None else ""
    messages: list[Message] = []
    calls = _Calls()
    for index, content in enumerate(contents):
        where = f"contents[{index}]"
        if content.role == "model":
            messages.append(_model_turn(content.parts, f"{where}.parts", calls))
        elif content.role in (None, "user", "function"):
            messages += _user_turn(content.parts, f"{where}.parts", calls)
        else:
            raise invalid_request(
                f"{where}.role must be 'user' or 'model', got {content.role!r}",
                param=f"{where}.role",
                code="invalid_content",
            )
    return Conversation((instruction,) if instruction else (), tuple(messages))


@dataclass
class _Calls:
    """The model's calls so far, and which of them a response answered."""

    made: list[ToolCall] = field(default_factory=list)
    answered: set[str] = field(default_factory=set)

    def add(self, part: dict[str, Any], where: str) -> ToolCall:
        function = readers.optional_object(part["functionCall"], f"{where}.functionCall") or {}
        name = readers.required_string(function, "name", f"{where}.functionCall")
        given = readers.optional_string(function, "id", f"{where}.functionCall")
        call = ToolCall(
            id=given or f"call_{uuid.uuid4().hex[:24]}",
            name=name,
            arguments=json.dumps(
                readers.optional_object(function.get("args"), f"{where}.functionCall.args") or {}
            ),
            signature=readers.optional_string(part, "thoughtSignature", where),
        )
        self.made.append(call)
        return call

    def answer(self, response: dict[str, Any], where: str) -> ToolCall:
        place = f"{where}.functionResponse"
        given, name = (
            readers.optional_string(response, "id", place),
            readers.optional_string(response, "name", place),
        )
        for call in self.made:
            if call.id in self.answered:
                continue
            if (given and call.id == given) or (not given and call.name == name):
                self.answered.add(call.id)
                return call
        raise invalid_request(
            f"{where}.functionResponse answers no functionCall of an earlier model turn "
            f"(name {name!r}, id {given!r})",
            param=f"{where}.functionResponse",
            code="unknown_tool_call",
        )


def _model_turn(parts: list[dict[str, Any]], where: str, calls: _Calls) -> Message:
    texts: list[str] = []
    made: list[ToolCall] = []
    for position, part in enumerate(parts):
        place = f"{where}[{position}]"
        if "functionCall" in part:
            made.append(calls.add(part, place))
        elif readers.optional_flag(part, "thought", place):
            continue  # the model's thoughts: Gemini keeps what it needs in signatures
        elif (text := readers.optional_string(part, "text", place)) is not None:
            texts.append(text)
        else:
            raise readers.unsupported_part(_kind(part), place, "text and functionCall")
    return Message(role="assistant", content="".join(texts), tool_calls=tuple(made))


def _user_turn(parts: list[dict[str, Any]], where: str, calls: _Calls) -> list[Message]:
    """Function responses first (as Gemini orders them), then the user's own parts."""
    messages: list[Message] = []
    own: list[Part] = []
    for position, part in enumerate(parts):
        place = f"{where}[{position}]"
        if "functionResponse" in part:
            response = (
                readers.optional_object(part["functionResponse"], f"{place}.functionResponse") or {}
            )
            call = calls.answer(response, place)
            answer = readers.optional_object(
                response.get("response"), f"{place}.functionResponse.response"
            )
            messages.append(
                Message(
                    role="tool",
                    content=_response_text(answer),
                    tool_call_id=call.id,
                    name=call.name,
                )
            )
        elif (text := readers.optional_string(part, "text", place)) is not None:
            own.append(text)
        elif "inlineData" in part or "fileData" in part:
            own.append(_media(part, place))
        else:
            raise readers.unsupported_part(
                _kind(part), place, "text, inlineData, fileData (images) and functionResponse"
            )
    if own:
        messages.append(readers.user_message(own))
    return messages


def _response_text(response: Any) -> str:
    """A function's response as the tool result's text: its ``output`` or ``result``
    when that is all there is to it (Gemini CLI's shape), else the object as JSON."""
    if isinstance(response, dict) and len(response) == 1:
        (value,) = response.values()
        if isinstance(value, str):
            return value
    return json.dumps(response)


def _media(part: dict[str, Any], where: str) -> Part:
    """An image (``inlineData`` or ``fileData``), or a file given inline (a PDF, text)."""
    if "inlineData" in part:
        place = f"{where}.inlineData"
        inline = readers.optional_object(part["inlineData"], place) or {}
        mime = _mime_type(inline, place)
        uri = f"data:{mime};base64,{readers.required_string(inline, 'data', place)}"
        if mime.startswith("image/"):
            return readers.image(uri, place)
        name = f"inline{mimetypes.guess_extension(mime) or ''}"
        return readers.document(None, uri, name, place)
    place = f"{where}.fileData"
    linked = readers.optional_object(part["fileData"], place) or {}
    if not _mime_type(linked, place).startswith("image/"):
        raise readers.unsupported_part("fileData", where, "images as inlineData or fileData")
    return readers.image(
        readers.optional_string(linked, "fileUri", place) or "", f"{place}.fileUri"
    )


def _mime_type(blob: dict[str, Any], place: str) -> str:
    """A blob's ``mimeType``, or ``mime_type``: Google reads a field in either spelling,
    and the google-genai SDK sends this one snake-cased."""
    key = "mimeType" if "mimeType" in blob else "mime_type"
    return readers.optional_string(blob, key, place) or ""


def _kind(part: dict[str, Any]) -> str:
    return next(iter(part), "empty part")


def _text(parts: list[dict[str, Any]], where: str) -> str:
    texts = []
    for position, part in enumerate(parts):
        text = readers.optional_string(part, "text", f"{where}[{position}]")
        if text is None:
            raise readers.unsupported_part(_kind(part), f"{where}[{position}]", "text")
        texts.append(text)
    return "\n\n".join(texts)


def read_tools(tools: list[dict[str, Any]], limit: int) -> tuple[readers.ToolList, tuple[str, ...]]:
    """The function declarations (``parameters`` in Gemini's schema dialect, or
    ``parametersJsonSchema``), and the built-in tools left out (named)."""
    declared = [
        (
            index,
            readers.optional_list(
                tool.get("functionDeclarations"), f"tools[{index}].functionDeclarations"
            ),
        )
        for index, tool in enumerate(tools)
    ]
    readers.bounded_tools(sum(len(found) for _, found in declared), limit)
    read = readers.ToolList(limit)
    dropped = [kind for tool in tools for kind in tool if kind != "functionDeclarations"]
    for index, declarations in declared:
        for position, declaration in enumerate(declarations):
            where = f"tools[{index}].functionDeclarations[{position}]"
            if not isinstance(declaration, dict):
                raise invalid_request(
                    f"{where} must be an object", param=where, code="invalid_tool"
                )
            schema, param = _parameters(declaration, where)
            function = {**declaration, "parameters": schema}
            read.add(function, where, param)
    return read, tuple(dropped)


def _parameters(declaration: dict[str, Any], where: str) -> tuple[Any, str]:
    if "parametersJsonSchema" in declaration:
        schema = lower_case_types(declaration["parametersJsonSchema"])
        return schema, f"{where}.parametersJsonSchema"
    return json_schema(declaration.get("parameters")), f"{where}.parameters"


def _tool_choice(config: dict[str, Any] | None, tools: tuple[ToolSpec, ...]) -> ToolChoice | None:
    """``functionCallingConfig``: ``AUTO``, ``ANY`` (one of ``allowedFunctionNames``, one
    named: that one) or ``NONE``."""
    param = "toolConfig.functionCallingConfig"
    calling = readers.optional_object(camel_case(config or {}).get("functionCallingConfig"), param)
    if calling is None:
        return None
    calling = camel_case(calling)
    allowed = readers.string_list(
        calling.get("allowedFunctionNames"), f"{param}.allowedFunctionNames"
    )
    if "mode" not in calling:
        return None
    mode = calling["mode"]
    if not isinstance(mode, str) or mode not in _CALLING_MODES:
        raise readers.invalid_tool_choice(f"{param}.mode", "AUTO, ANY, NONE or VALIDATED")
    named = allowed[0] if mode == "ANY" and len(allowed) == 1 else None
    return readers.chosen_tool(_CALLING_MODES[mode], named, tools, f"{param}.allowedFunctionNames")  # type: ignore[arg-type]


def _sampling(config: dict[str, Any], safety: list[dict[str, Any]] | None) -> Sampling:
    if config.get("candidateCount", 1) != 1:
        raise invalid_request(
            "generationConfig.candidateCount must be 1: the gateway answers one candidate "
            "(history and budgets count turns)",
            param="generationConfig.candidateCount",
            code="unsupported_parameter",
        )
    extras: dict[str, Any] = {}
    thinking = readers.optional_object(
        config.get("thinkingConfig"), "generationConfig.thinkingConfig"
    )
    if thinking is not None:
        thinking = extras["thinkingConfig"] = camel_case(thinking)
    if safety:
        extras["safetySettings"] = safety
    return Sampling(
        temperature=_number(config, "temperature"),
        top_p=_number(config, "topP"),
        top_k=_integer(config, "topK"),
        max_tokens=_integer(config, "maxOutputTokens"),
        stop=readers.string_list(config.get("stopSequences"), "generationConfig.stopSequences"),
        seed=_integer(config, "seed"),
        presence_penalty=_number(config, "presencePenalty"),
        frequency_penalty=_number(config, "frequencyPenalty"),
        reasoning_effort=_effort(thinking),
        passthrough=PassThrough("gemini", extras),
    )


def _number(config: dict[str, Any], name: str) -> float | None:
    value = config.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise _not_a(name, "a finite number")
    return float(value)


def _integer(config: dict[str, Any], name: str) -> int | None:
    value = config.get(name)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise _not_a(name, "a non-negative integer")
    return value


def _not_a(name: str, what: str) -> Exception:
    return readers.wrong_type(f"generationConfig.{name}", what)


def _effort(thinking: dict[str, Any] | None) -> str | None:
    """A thinking budget as the effort providers other than Gemini take."""
    budget = (thinking or {}).get("thinkingBudget")
    if budget is None:
        return None
    if isinstance(budget, bool) or not isinstance(budget, int):
        raise _not_a("thinkingConfig.thinkingBudget", "an integer")
    if budget == 0:
        return "none"
    if budget < 0:  # dynamic: the model decides
        return None
    return next((effort for limit, effort in _EFFORTS if budget <= limit), "high")


def _response_format(config: dict[str, Any]) -> ResponseFormat | None:
    """``responseMimeType: application/json`` with ``responseSchema`` (Gemini's dialect)
    or ``responseJsonSchema``: structured output."""
    mime = config.get("responseMimeType")
    if mime in (None, "text/plain"):
        return None
    if mime != "application/json":
        raise invalid_request(
            "generationConfig.responseMimeType must be text/plain or application/json",
            param="generationConfig.responseMimeType",
            code="invalid_response_format",
        )
    if "responseJsonSchema" in config:
        schema = lower_case_types(config["responseJsonSchema"])
        param = "generationConfig.responseJsonSchema"
    elif "responseSchema" in config:
        schema, param = json_schema(config["responseSchema"]), "generationConfig.responseSchema"
    else:
        return readers.reply_format("json_object", None, None, None, "", "")
    return readers.reply_format("json_schema", schema, "response", False, "", param)


def content_text(content: Content, where: str) -> str:
    """The text of one content (what an embedding request embeds: one vector for it)."""
    text = _text(content.parts, f"{where}.parts")
    if not text:
        raise invalid_request(f"{where} has no text", param=f"{where}.parts", code="invalid_input")
    return text


def _within(field: str, error: ApiError) -> ApiError:
    """``error`` of a request read on its own, as the field ``field`` of another."""
    if error.param is not None:
        error.message = error.message.replace(error.param, f"{field}.{error.param}", 1)
        error.param = f"{field}.{error.param}"
    return error


def camel_case(config: dict[str, Any]) -> dict[str, Any]:
    """A config object's keys as the REST API spells them: Google's servers take
    ``thinking_budget`` for ``thinkingBudget`` (proto JSON), and its SDKs send both."""
    return {_camel(key): value for key, value in config.items()}


def _camel(key: str) -> str:
    head, *rest = key.split("_")
    return head + "".join(word.capitalize() for word in rest)
