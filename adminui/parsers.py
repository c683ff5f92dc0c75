"""Request bodies as JSON, YAML or an HTML form, all parsed into one mapping for one schema.

Line breaks in strings are normalised to ``\\n`` (browsers send ``\\r\\n`` from text areas,
and a ``\\r`` cannot be written to a YAML block scalar and read back).
"""

from typing import Any

from django.http import HttpRequest, QueryDict
from ninja.parser import Parser
from ruamel.yaml.error import YAMLError

from adminui.forms import FORMS, ConfigForm
from adminui.negotiation import FORM_TYPES
from agents.yamldoc import parse

YAML_TYPES = frozenset({"application/yaml", "application/x-yaml", "text/yaml"})


class BodyError(ValueError):
    """The body cannot be read; the message says why (answered with 400)."""


class AdminParser(Parser):
    def parse_body(self, request: HttpRequest) -> dict[str, Any]:
        if request.content_type in YAML_TYPES:
            data = _yaml(request.body)
        elif request.content_type in FORM_TYPES:
            data = _form(request)
        else:
            data = _json(request, super())
        if not isinstance(data, dict):
            raise BodyError("the body must be an object (a mapping of fields)")
        return _normalised(data)


def form_data(request: HttpRequest) -> QueryDict:
    """The submitted fields, for POST and for htmx's PUT alike."""
    return request.POST if request.method == "POST" else QueryDict(request.body)


def _normalised(value: Any) -> Any:
    """``value`` with every ``\\r\\n`` and lone ``\\r`` in its strings (keys too) made ``\\n``."""
    if isinstance(value, dict):
        return {_normalised(key): _normalised(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_normalised(item) for item in value]
    if isinstance(value, str):
        return value.replace("\r\n", "\n").replace("\r", "\n")
    return value


def _yaml(body: bytes) -> Any:
    try:
        return parse(body.decode("utf-8"))
    except (UnicodeDecodeError, YAMLError) as error:
        raise BodyError(f"the body is not valid YAML: {error}") from error


def _json(request: HttpRequest, default: Parser) -> Any:
    try:
        return default.parse_body(request)
    except ValueError as error:
        raise BodyError(f"the body is not valid JSON: {error}") from error


def _form(request: HttpRequest) -> dict[str, Any]:
    """Decode the fields with the collection's form (the one the page showed)."""
    section = request.path.removeprefix("/admin/").split("/")[0]
    if section == "config":
        form = ConfigForm(form_data(request))
    else:
        form_class = FORMS.get(section)
        if form_class is None:
            raise BodyError("this route takes no form body")
        key = request.path.removeprefix("/admin/").split("/")[1:2]
        form = form_class(form_data(request), key=key[0] if key else None)
    if not form.is_valid():
        raise BodyError(
            "; ".join(f"{name}: {' '.join(errors)}" for name, errors in form.errors.items())
        )
    return form.body()
