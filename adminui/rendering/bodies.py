"""Every admin request body is read here: HTML forms, JSON and YAML.

JSON and YAML are parsed by ninja's parser (``AdminParser``) into one mapping for the
route's schema. A form is handed on as an empty mapping: the route decodes it with the
Django form of the page that sent it (``form_data``, ``adminui.editing.formpages``). A YAML
body a route keeps as text (the config file) is ``yaml_text``. Line breaks in strings are
normalised to ``\\n`` (a ``\\r`` cannot be written to a YAML block scalar and read back).
A body that cannot be read is a ``BodyError``, answered with 400.
"""

from typing import Any, cast, overload

from django.http import HttpRequest, QueryDict
from ninja.parser import Parser
from ruamel.yaml.error import YAMLError

from adminui.rendering.negotiation import FORM_TYPES
from agents.yamldoc import describe_yaml_error, parse

YAML_TYPES = frozenset({"application/yaml", "application/x-yaml", "text/yaml"})


class BodyError(ValueError):
    """The body cannot be read; the message says why (answered with 400)."""


class AdminParser(Parser):
    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        if request.content_type in FORM_TYPES:
            return {}
        if request.content_type in YAML_TYPES:
            data = _yaml(request.body)
        else:
            data = _json(request, cast(Parser, super()))
        if not isinstance(data, dict):
            raise BodyError("the body must be an object (a mapping of fields)")
        return normalised(data)


def is_yaml(request: HttpRequest) -> bool:
    return request.content_type in YAML_TYPES


def yaml_text(request: HttpRequest) -> str:
    """The YAML body as sent (``AdminParser`` has already refused one that is not UTF-8)."""
    return request.body.decode("utf-8")


def form_data(request: HttpRequest) -> QueryDict:
    """The submitted fields, for POST and for htmx's PUT alike."""
    return request.POST if request.method == "POST" else QueryDict(request.body)


@overload
def normalised(value: dict[str, Any]) -> dict[str, Any]: ...
@overload
def normalised(value: Any) -> Any: ...
def normalised(value: Any) -> Any:
    """``value`` with every ``\\r\\n`` and lone ``\\r`` in its strings (keys too) made ``\\n``."""
    if isinstance(value, dict):
        return {normalised(key): normalised(item) for key, item in value.items()}
    if isinstance(value, list):
        return [normalised(item) for item in value]
    if isinstance(value, str):
        return value.replace("\r\n", "\n").replace("\r", "\n")
    return value


def _yaml(body: bytes) -> Any:
    try:
        return parse(body.decode("utf-8"))
    except UnicodeDecodeError as error:
        raise BodyError(f"the body is not UTF-8 text: {error}") from error
    except YAMLError as error:
        raise BodyError(f"the body is not valid YAML: {describe_yaml_error(error)}") from error


def _json(request: HttpRequest, default: Parser) -> Any:
    try:
        return default.parse_body(request)
    except ValueError as error:
        raise BodyError(f"the body is not valid JSON: {error}") from error
