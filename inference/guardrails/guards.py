"""A guardrail of the config as a check of text: what it finds, by entity."""

import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING

from agents.schema import GuardrailConfig
from agents.validation import PII_ENTITIES
from inference.guardrails.matches import Match, without_overlaps
from inference.guardrails.presidio import find_pii

if TYPE_CHECKING:
    from inference.guardrails.patterns import PatternSet

Finder = Callable[[str], list[Match]]

# Each guardrail's finder, built once per loaded config (its patterns compiled once).
_FINDERS: dict[int, tuple[weakref.ref[GuardrailConfig], Finder]] = {}


def finder(guard: GuardrailConfig) -> Finder:
    known = _FINDERS.get(id(guard))
    if known is not None and known[0]() is guard:
        return known[1]
    built = _built(guard)
    _FINDERS[id(guard)] = (weakref.ref(guard, lambda _: _FINDERS.pop(id(guard), None)), built)
    return built


def _built(guard: GuardrailConfig) -> Finder:
    # RE2 is loaded by the first guardrail built, not by every process.
    from inference.guardrails.patterns import SECRETS, custom, denylist

    match guard.kind:
        case "pii":
            entities = tuple(guard.entities or PII_ENTITIES)
            own = custom(guard.patterns)
            return lambda text: without_overlaps([*find_pii(text, entities), *own.find(text)])
        case "secrets":
            return _patterns(SECRETS)
        case "denylist":
            return _patterns(denylist(guard.words, guard.patterns))
        case _:  # the loop guard looks at tool calls, not text
            return lambda text: []


def _patterns(patterns: "PatternSet") -> Finder:
    return lambda text: without_overlaps(patterns.find(text))
