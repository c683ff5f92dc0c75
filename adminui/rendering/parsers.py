"""Request bodies as JSON or YAML, parsed into one mapping for one schema.

HTML form bodies are not parsed here: each route decodes its own form with the Django
form of the page that sent it (``adminui.editing.formpages``), so the parser hands them on as
an empty mapping. Line breaks in strings are normalised to ``\\n`` (a ``\\r`` cannot be
written to a YAML block scalar and read back).
"""

from typing import Any

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
            data = _json(request, super())
        if not isinstance(data, dict):
            raise BodyError("the body must be an object (a mapping of fields)")
        return normalised(data)


def form_data(request: HttpRequest) -> QueryDict:
    """The submitted fields, for POST and for htmx's PUT alike."""
    return request.POST if request.method == "POST" else QueryDict(request.body)


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
