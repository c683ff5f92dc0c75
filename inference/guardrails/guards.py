"""A guardrail of the config as a check of text: what it finds, by entity."""

import hashlib
import weakref
from collections import OrderedDict
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
    built = _Remembered(_built(guard))
    _FINDERS[id(guard)] = (weakref.ref(guard, lambda _: _FINDERS.pop(id(guard), None)), built)
    return built


class _Remembered:
    """A finder that remembers what it found in the texts it saw last, by their digest
    (never the text): the history a conversation replays with every request is checked
    once, not once a turn."""

    SIZE = 4096  # texts remembered, per guardrail

    def __init__(self, find: Finder) -> None:
        self.find = find
        self.found: OrderedDict[bytes, list[Match]] = OrderedDict()

    def __call__(self, text: str) -> list[Match]:
        if len(text) < 64:  # cheaper to look at again than to digest
            return self.find(text)
        digest = hashlib.blake2b(text.encode(errors="surrogatepass"), digest_size=16).digest()
        known = self.found.get(digest)
        if known is not None:
            self.found.move_to_end(digest)
            return known
        found = self.found[digest] = self.find(text)
        if len(self.found) > self.SIZE:
            self.found.popitem(last=False)
        return found


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
