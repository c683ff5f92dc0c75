"""Tool names a provider accepts, and names made safe for it.

Names from the config (MCP tools, subagents) and from clients are kept as they are
wherever the provider accepts them; elsewhere each disallowed character becomes ``_``.
The result depends only on the names and their order, so the same tools get the same
names in every request (a client's follow-up refers to them).
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class ToolNameRule:
    allowed: str  # the characters of a name, as a regex character class body
    first: str  # the characters a name may start with
    max_length: int = 64

    def accepts(self, name: str) -> bool:
        pattern = f"[{self.first}][{self.allowed}]{{0,{self.max_length - 1}}}"
        return re.fullmatch(pattern, name) is not None

    def safe_names(self, names: Sequence[str]) -> list[str]:
        """One accepted, distinct name for each of ``names``, in order."""
        taken: set[str] = set()
        safe = []
        for name in names:
            candidate = name if self.accepts(name) else self._sanitized(name)
            base, number = candidate, 2
            while candidate in taken:
                suffix = f"_{number}"
                candidate = base[: self.max_length - len(suffix)] + suffix
                number += 1
            taken.add(candidate)
            safe.append(candidate)
        return safe

    def _sanitized(self, name: str) -> str:
        text = re.sub(f"[^{self.allowed}]", "_", name) or "_"
        if not re.match(f"[{self.first}]", text):
            text = "_" + text
        return text[: self.max_length]


# OpenAI (and the servers speaking its format) and Anthropic: ^[a-zA-Z0-9_-]{1,64}$.
LETTERS_DIGITS_DASHES = ToolNameRule(allowed="A-Za-z0-9_-", first="A-Za-z0-9_-")
# Gemini: a letter or underscore first, then letters, digits, _ . : -; at most 64.
GEMINI_NAMES = ToolNameRule(allowed="A-Za-z0-9_.:-", first="A-Za-z_")
# Cohere: letters, digits and _, not starting with a digit.
COHERE_NAMES = ToolNameRule(allowed="A-Za-z0-9_", first="A-Za-z_")


def strictest(rules: Sequence[ToolNameRule]) -> ToolNameRule:
    """The rule whose names every one of ``rules`` accepts (an agent whose calls may go to
    providers of several kinds names its tools once, for all of them)."""
    first, *others = rules
    if all(rule == first for rule in others):
        return first

    def common(classes: list[str]) -> str:
        return "".join(
            re.escape(char)
            for char in map(chr, range(32, 127))
            if all(re.fullmatch(f"[{body}]", char) for body in classes)
        )

    return ToolNameRule(
        allowed=common([rule.allowed for rule in rules]),
        first=common([rule.first for rule in rules]),
        max_length=min(rule.max_length for rule in rules),
    )
