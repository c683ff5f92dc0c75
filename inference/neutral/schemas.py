"""JSON Schemas a client sends (a reply's, a tool's parameters), checked up front, and
the validator of replies against them.

jsonschema, referencing and RE2 (``inference.neutral.regex``), about 5 MB of a
process, are loaded by the first schema checked: a gateway whose requests carry none
never loads them.
"""

import json
from collections.abc import Iterator
from functools import cache
from typing import TYPE_CHECKING, Any

from inference.neutral.errors import ApiError, invalid_request

if TYPE_CHECKING:
    from jsonschema.protocols import Validator
    from referencing import Registry


# Deeper schemas would exhaust the stack of the recursive validator (a 500).
MAX_SCHEMA_DEPTH = 64


@cache
def _local_only() -> "Registry":
    """The registry of references: the schema comes from the client, and following its
    remote $refs would let any client make the gateway fetch any URL. Only references
    inside the schema itself resolve."""
    from referencing import Registry
    from referencing.exceptions import NoSuchResource

    def refuse_retrieval(uri: str) -> Any:
        raise NoSuchResource(ref=uri)  # type: ignore[call-arg]  # an attrs class the stubs miss

    return Registry(retrieve=refuse_retrieval)  # type: ignore[call-arg]


def schema_validator(schema: dict[str, Any]) -> "Validator":
    """The validator of replies against ``schema``: its regexes run on RE2."""
    from jsonschema import validators

    from inference.neutral.regex import linear_time

    validator_class = validators.validator_for(schema, default=validators.Draft202012Validator)
    return linear_time(validator_class)(schema, registry=_local_only())


def check_reply_schema(schema: dict[str, Any], param: str) -> None:
    """400 naming ``param`` unless replies can be validated against ``schema``: a valid
    JSON Schema whose patterns all run on RE2."""
    from inference.neutral.regex import check_patterns

    check_json_schema(schema, param)
    check_patterns(schema, param)


def check_json_schema(
    schema: dict[str, Any], param: str, code: str = "invalid_json_schema"
) -> None:
    """400 naming ``param`` unless ``schema`` is a valid JSON Schema whose ``$ref``s all
    resolve inside it."""
    from jsonschema import validators
    from jsonschema.exceptions import SchemaError
    from referencing import Resource
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    def reject(message: str) -> ApiError:
        return invalid_request(f"{param} {message}", param=param, code=code)

    if nesting_depth(schema) > MAX_SCHEMA_DEPTH:
        raise reject(f"is nested deeper than {MAX_SCHEMA_DEPTH} levels of objects and arrays")
    try:
        json.dumps(schema, allow_nan=False)
    except ValueError as error:
        raise reject("must not contain NaN or infinite numbers") from error
    validator = validators.validator_for(schema, default=validators.Draft202012Validator)
    try:
        validator.check_schema(schema)
    except SchemaError as error:
        location = "/".join(str(part) for part in error.path) or "(root)"
        raise reject(f"is not a valid JSON Schema at {location}: {error.message}") from error
    root = Resource.from_contents(schema, default_specification=DRAFT202012)
    resolver = _local_only().resolver_with_root(root)
    for reference in _references(schema):
        try:
            resolver.lookup(reference)
        except Unresolvable as error:
            raise reject(
                f"has a $ref that does not resolve inside the schema: {reference!r} "
                "(remote references are not fetched)"
            ) from error


def nesting_depth(value: Any) -> int:
    """How deep objects and arrays nest in ``value`` (without recursion: the value may be
    nested far deeper than the interpreter's stack)."""
    deepest = 0
    pending: list[tuple[Any, int]] = [(value, 1)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, dict | list):
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            pending.extend((child, depth + 1) for child in children)
    return deepest


def _references(value: Any) -> Iterator[str]:
    if isinstance(value, dict):
        for key, item in value.items():
            if key == "$ref" and isinstance(item, str):
                yield item
            else:
                yield from _references(item)
    elif isinstance(value, list):
        for item in value:
            yield from _references(item)
