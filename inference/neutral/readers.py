"""Readers every dialect shares: pieces of a request that mean the same in each API once
the dialect has taken them out of its own shape (function tools, the tool choice,
images, user messages, a reply's JSON format). Everything a client can get wrong here is
a 400 naming the field, in the dialect's terms (``param``)."""

import mimetypes
import re
from typing import Any, Literal

from inference.neutral.errors import ApiError, invalid_request
from inference.neutral.request import ToolOffer
from inference.neutral.schemas import check_json_schema, check_reply_schema
from inference.neutral.types import (
    Block,
    Document,
    Image,
    Message,
    Part,
    ResponseFormat,
    ToolChoice,
    ToolSpec,
)

SYSTEM_ROLES = ("system", "developer")
TOOL_MODES = ("none", "auto", "required")  # the tool choices that name no tool
_DATA_IMAGE = re.compile(r"data:image/[A-Za-z0-9.+-]+;base64,")
_DATA_URI = re.compile(r"data:([A-Za-z0-9.+-]+/[A-Za-z0-9.+-]+)?(?:;[^,;]+)*;base64,(.*)", re.S)


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
    return ToolSpec(name=name, description=description, parameters=parameters)


def bounded_tools(count: int, limit: int, param: str = "tools") -> None:
    """400 naming ``param`` when a request carries more than ``limit`` tool definitions
    (``limits.max_tools``): checked before they are read."""
    if count > limit:
        raise invalid_request(
            f"{param}: a request may carry at most {limit} tool definitions "
            f"(limits.max_tools), this one has {count}",
            param=param,
            code="too_many_tools",
        )


class ToolList:
    """The function tools a dialect reads, one by one (at most ``limit``): each spec, and
    where its parameters schema is in the request."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.specs: list[ToolSpec] = []
        self.schema_params: list[str] = []

    def add(self, function: dict[str, Any], where: str, schema_param: str = "") -> ToolSpec:
        """``function``: ``name``, ``description``, ``parameters``; ``schema_param``: where
        the parameters are (default ``<where>.parameters``)."""
        bounded_tools(len(self.specs) + 1, self.limit)
        spec = tool_spec(function, where)
        self.specs.append(spec)
        self.schema_params.append(schema_param or f"{where}.parameters")
        return spec

    def checked(self) -> tuple[ToolSpec, ...]:
        """The specs, each name once."""
        return checked_names(self.specs, "tools")


def check_tool_schemas(offer: ToolOffer) -> None:
    """400 naming the first tool whose ``parameters`` is not a usable JSON Schema. It
    costs about a millisecond a tool: the pipeline runs it once the request is admitted,
    and off the event loop for a long list."""
    for spec, param in zip(offer.specs, offer.schema_params, strict=True):
        check_json_schema(spec.parameters, param, "invalid_tool")


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


def chosen_tool(
    mode: Literal["auto", "none", "required"],
    name: str | None,
    tools: tuple[ToolSpec, ...],
    param: str,
) -> ToolChoice:
    """The tool choice, once the dialect has read its shape: ``name`` must be one of the
    request's tools."""
    if name is not None and name not in {tool.name for tool in tools}:
        raise invalid_request(
            f"{param} names the function '{name}', which is not one of the request's tools",
            param=param,
            code="invalid_tool_choice",
        )
    return ToolChoice(mode=mode, name=name)


def invalid_tool_choice(param: str, allowed: str) -> ApiError:
    return invalid_request(f"{param} must be {allowed}", param=param, code="invalid_tool_choice")


def function_choice(value: Any, tools: tuple[ToolSpec, ...], param: str) -> ToolChoice | None:
    """OpenAI's tool choice (chat completions and Responses): ``none``, ``auto``,
    ``required``, or one function, named as either API names it
    (``{type: function, function: {name}}`` or ``{type: function, name}``)."""
    if value is None:
        return None
    if value in TOOL_MODES:
        return chosen_tool(value, None, tools, param)
    function = value.get("function") if isinstance(value, dict) else None
    name = function.get("name") if isinstance(function, dict) else None
    name = value.get("name", name) if isinstance(value, dict) else None
    if not isinstance(name, str) or not isinstance(value, dict) or value.get("type") != "function":
        raise invalid_tool_choice(
            param,
            "'none', 'auto', 'required' or {'type': 'function', 'function': {'name': ...}}",
        )
    return chosen_tool("required", name, tools, param)


_URL_SAFE = str.maketrans("-_", "+/")


def standard_base64(data: str) -> str:
    """Base64 in the standard alphabet with its padding, from either alphabet, padded or
    not (the google-genai SDK sends the URL-safe one): what every provider takes."""
    data = data.translate(_URL_SAFE).rstrip("=")
    return data + "=" * (-len(data) % 4)


def image(url: str, param: str) -> Image:
    """An image given by https URL or ``data:image/...;base64,`` URI (400 otherwise)."""
    if url.startswith("https://"):
        return Image(url)
    if found := _DATA_IMAGE.match(url):
        return Image(found.group(0) + standard_base64(url[found.end() :]))
    raise invalid_request(
        f"{param} must be an https URL or a data:image/...;base64, URI",
        param=param,
        code="invalid_image_url",
    )


def document(
    file_id: Any, file_data: Any, filename: Any, where: str, block: dict[str, Any] | None = None
) -> Document:
    """A file part: a gateway ``file_id`` (resolved before the call), or ``file_data`` as a
    ``data:<media type>;base64,`` URI (or bare base64 with a ``filename``), in either
    base64 alphabet."""
    name = filename if isinstance(filename, str) and filename else "file"
    if isinstance(file_id, str) and file_id:
        return Document(name, file_id=file_id, where=where, block=block)
    if isinstance(file_data, str) and file_data:
        found = _DATA_URI.match(file_data)
        media_type, data = (found.group(1), found.group(2)) if found else ("", file_data)
        guessed = mimetypes.guess_type(name)[0] or "application/octet-stream"
        return Document(
            name, media_type or guessed, standard_base64(data), where=where, block=block
        )
    raise invalid_request(
        f"{where} needs a file_id (of /v1/files) or file_data", param=where, code="invalid_file"
    )


def unsupported_part(kind: str | None, where: str, supported: str) -> ApiError:
    return invalid_request(
        f"{where}: content parts of type {kind!r} are not supported (only {supported})",
        param=where,
        code="unsupported_content_part",
    )


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


def reply_format(
    kind: Any, schema: Any, name: Any, strict: Any, param: str, schema_param: str
) -> ResponseFormat | None:
    """The format a reply must have, once the dialect has read its shape: ``kind``
    ``text`` (none to enforce), ``json_object`` or ``json_schema`` with ``schema``.
    ``param`` names the kind's field, ``schema_param`` the schema's."""
    if kind == "text":
        return None
    if kind == "json_object":
        return ResponseFormat(kind="json_object")
    if kind != "json_schema":
        raise invalid_request(
            f"{param} must be 'text', 'json_object' or 'json_schema'",
            param=param,
            code="invalid_response_format",
        )
    if not isinstance(schema, dict):
        raise invalid_request(
            f"{schema_param} must be a JSON Schema object",
            param=schema_param,
            code="invalid_json_schema",
        )
    check_reply_schema(schema, schema_param)
    return ResponseFormat(
        kind="json_schema",
        schema=schema,
        name=name if isinstance(name, str) else "response",
        strict=bool(strict),
    )


def required_string(item: dict[str, Any], key: str, where: str) -> str:
    """``item[key]``, a non-empty string (400 naming ``where.key`` otherwise)."""
    value = item.get(key)
    if not isinstance(value, str) or not value:
        raise invalid_request(
            f"{where}.{key} must be a non-empty string", param=f"{where}.{key}", code="invalid_item"
        )
    return value


# Fields of a body typed only as "any JSON" (``dict[str, Any]``) are read with these: a
# value of another JSON type is a 400 naming the field, never coerced into the right one.


def optional_string(item: dict[str, Any], key: str, where: str) -> str | None:
    """``item[key]``, a string, or None when it is absent or null."""
    value = item.get(key)
    if value is not None and not isinstance(value, str):
        raise wrong_type(f"{where}.{key}", "a string")
    return value


def optional_flag(item: dict[str, Any], key: str, where: str) -> bool:
    """``item[key]``, a boolean (absent or null: false)."""
    value = item.get(key)
    if value is not None and not isinstance(value, bool):
        raise wrong_type(f"{where}.{key}", "a boolean")
    return bool(value)


def optional_object(value: Any, param: str) -> dict[str, Any] | None:
    """``value``, an object, or None when it is null."""
    if value is not None and not isinstance(value, dict):
        raise wrong_type(param, "an object")
    return value


def optional_list(value: Any, param: str) -> list[Any]:
    """``value``, a list (null: an empty one)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise wrong_type(param, "a list")
    return value


def string_list(value: Any, param: str) -> tuple[str, ...]:
    """``value``, a list of strings (null: none); a lone string is not one."""
    items = optional_list(value, param)
    for index, item in enumerate(items):
        if not isinstance(item, str):
            raise wrong_type(f"{param}[{index}]", "a string")
    return tuple(items)


def wrong_type(param: str, expected: str) -> ApiError:
    return invalid_request(f"{param} must be {expected}", param=param, code="invalid_type")
