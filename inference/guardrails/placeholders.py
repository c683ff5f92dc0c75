"""Redaction with restore: each value found becomes ``<ENTITY_n>`` on its way to the
model (the same value the same placeholder, numbered per entity from 1 within a
conversation), and the placeholders in the model's reply become the values again before
the client sees them, a stream's too (``Restorer``: a placeholder split across events is
held back until it is whole)."""

import re
from collections.abc import Iterable

from inference.guardrails.matches import Match

_PLACEHOLDER = re.compile(r"<([A-Z][A-Z0-9_]*_[0-9]+)>")
# The end of a text that may be the start of a placeholder the next piece completes.
_PARTIAL = re.compile(r"<[A-Z0-9_]*$")
_LONGEST = 64  # a partial placeholder longer than this is text


class Vault:
    """The values a conversation's redactions replaced, by placeholder."""

    def __init__(self) -> None:
        self.values: dict[str, str] = {}  # placeholder -> value
        self._placeholders: dict[tuple[str, str], str] = {}
        self._numbers: dict[str, int] = {}

    def placeholder(self, entity: str, value: str) -> str:
        known = self._placeholders.get((entity, value))
        if known is not None:
            return known
        number = self._numbers.get(entity, 0) + 1
        self._numbers[entity] = number
        placeholder = f"<{entity}_{number}>"
        self._placeholders[(entity, value)] = placeholder
        self.values[placeholder[1:-1]] = value
        return placeholder

    def redact(self, text: str, matches: Iterable[Match]) -> str:
        """``text`` with each match (in text order, none overlapping) replaced."""
        pieces: list[str] = []
        at = 0
        for match in matches:
            pieces += [
                text[at : match.start],
                self.placeholder(match.entity, text[match.start : match.end]),
            ]
            at = match.end
        pieces.append(text[at:])
        return "".join(pieces)

    def restore(self, text: str) -> str:
        if not self.values or "<" not in text:
            return text
        return _PLACEHOLDER.sub(lambda found: self.values.get(found[1], found[0]), text)


class Restorer:
    """Restores a stream's text piece by piece: what may be an unfinished placeholder is
    held back until the next piece (or the end) tells."""

    def __init__(self, vault: Vault) -> None:
        self.vault = vault
        self.held = ""

    def feed(self, piece: str) -> str:
        text = self.held + piece
        partial = _PARTIAL.search(text[-_LONGEST:])
        if partial is None:
            self.held = ""
        else:
            cut = len(text) - len(partial[0])
            text, self.held = text[:cut], text[cut:]
        return self.vault.restore(text)

    def flush(self) -> str:
        text, self.held = self.held, ""
        return self.vault.restore(text)
