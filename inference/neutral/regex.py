"""JSON Schema regular expressions on a linear-time engine: no client schema can stall
the event loop.

A client's ``response_format`` schema is checked against the model's reply on the event
loop. Python's ``re`` backtracks: ``^(a+)+$`` against ``"aaaa…a!"`` takes exponential
time and would freeze every request. Here ``pattern`` and ``patternProperties`` (and the
``additionalProperties`` that depends on them) run on RE2, which matches in time linear
in the input. RE2 has no backreferences or lookaround: a schema using them is a 400 up
front.
"""

from collections.abc import Iterator
from functools import cache, lru_cache
from typing import Any, cast

import re2
from jsonschema import validators
from jsonschema.exceptions import ValidationError
from jsonschema.protocols import Validator

from inference.neutral.errors import ApiError, invalid_request

# Keywords whose values are data, not schemas: a "pattern" key inside them is not a regex.
_DATA_KEYWORDS = frozenset({"const", "enum", "default", "examples"})
# Keywords whose values map names to schemas: a name there is no keyword ("enum" may well
# be a property's name), only what it maps to is a schema.
_SCHEMA_MAPS = frozenset({"properties", "patternProperties", "$defs", "definitions"})


class PatternError(Exception):
    """A pattern RE2 cannot compile (backreference, lookaround, too large)."""


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False  # a refused pattern is the client's, not a log line
    return options


_OPTIONS = _options()


@lru_cache(maxsize=1024)
def compile_pattern(pattern: str) -> Any:
    try:
        return re2.compile(pattern, _OPTIONS)
    except re2.error as error:
        reason = error.args[0] if error.args else "invalid pattern"
        if isinstance(reason, bytes):
            reason = reason.decode(errors="replace")
        raise PatternError(str(reason)) from error


def search(pattern: str, text: str) -> bool:
    """Whether ``pattern`` matches somewhere in ``text`` (JSON Schema semantics)."""
    try:
        return compile_pattern(pattern).search(text) is not None
    except UnicodeEncodeError:
        return False  # a lone surrogate matches no pattern


def check_patterns(schema: Any, param: str) -> None:
    """400 naming ``param`` when a pattern of ``schema`` cannot run on RE2."""
    for where, pattern in _patterns(schema, ()):
        try:
            compile_pattern(pattern)
        except PatternError as error:
            raise _refused(
                param,
                where,
                f"has a pattern the gateway's linear-time regex engine (RE2) cannot run: "
                f"{pattern!r} ({error}); backreferences and lookaround are not supported",
            ) from error
    if _uses(schema, "unevaluatedProperties") and _uses(schema, "patternProperties"):
        raise _refused(
            param,
            (),
            "uses unevaluatedProperties together with patternProperties, which the gateway "
            "does not support (use additionalProperties)",
        )


def _refused(param: str, where: tuple[str, ...], message: str) -> ApiError:
    location = "/".join(where) or "(root)"
    return invalid_request(
        f"{param} {message} at {location}", param=param, code="invalid_json_schema"
    )


def _patterns(value: Any, where: tuple[str, ...]) -> Iterator[tuple[tuple[str, ...], str]]:
    if isinstance(value, list):
        for index, item in enumerate(value):
            yield from _patterns(item, (*where, str(index)))
        return
    if not isinstance(value, dict):
        return
    for key, item in value.items():
        if key in _DATA_KEYWORDS:
            continue
        if key == "pattern" and isinstance(item, str):
            yield (*where, key), item
        elif key in _SCHEMA_MAPS and isinstance(item, dict):
            if key == "patternProperties":
                yield from (((*where, key), name) for name in item)
            for name, subschema in item.items():
                yield from _patterns(subschema, (*where, key, name))
        else:
            yield from _patterns(item, (*where, key))


def _uses(value: Any, keyword: str) -> bool:
    if isinstance(value, list):
        return any(_uses(item, keyword) for item in value)
    if not isinstance(value, dict):
        return False
    if keyword in value:
        return True
    for key, item in value.items():
        if key in _SCHEMA_MAPS and isinstance(item, dict):
            if any(_uses(subschema, keyword) for subschema in item.values()):
                return True
        elif key not in _DATA_KEYWORDS and _uses(item, keyword):
            return True
    return False


def _pattern(
    validator: Validator, pattern: str, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if validator.is_type(instance, "string") and not search(pattern, instance):
        yield ValidationError(f"{instance!r} does not match {pattern!r}")


def _pattern_properties(
    validator: Validator, properties: dict[str, Any], instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    for pattern, subschema in properties.items():
        for key, value in instance.items():
            if search(pattern, key):
                yield from validator.descend(value, subschema, path=key, schema_path=pattern)  # type: ignore[attr-defined]


def _additional_properties(
    validator: Validator, additional: Any, instance: Any, schema: dict[str, Any]
) -> Iterator[ValidationError]:
    if not validator.is_type(instance, "object"):
        return
    named = schema.get("properties", {})
    patterns = schema.get("patternProperties", {})
    extras = sorted(
        (
            key
            for key in instance
            if key not in named and not any(search(pattern, key) for pattern in patterns)
        ),
        key=str,
    )
    if validator.is_type(additional, "object"):
        for extra in extras:
            yield from validator.descend(instance[extra], additional, path=extra)  # type: ignore[attr-defined]
    elif not additional and extras:
        listed = ", ".join(repr(extra) for extra in extras)
        yield ValidationError(f"Additional properties are not allowed ({listed} unexpected)")


@cache
def linear_time(validator_class: type[Validator]) -> type[Validator]:
    """``validator_class`` with its regex keywords running on RE2."""
    extended = validators.extend(  # untyped in the stubs: it returns a validator class
        validator_class,
        {
            "pattern": _pattern,
            "patternProperties": _pattern_properties,
            "additionalProperties": _additional_properties,
        },
    )
    return cast(type[Validator], extended)
