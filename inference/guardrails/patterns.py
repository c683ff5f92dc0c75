"""The pattern kinds, on RE2 (linear time: no text can stall the event loop): secrets by
their published shapes, denied words and patterns, and a pii guardrail's own patterns."""

from collections.abc import Iterable, Iterator

import re2

from agents.schema import GuardrailPattern
from inference.guardrails.matches import Match

_SECRET_SHAPES = (
    ("ANTHROPIC_API_KEY", r"sk-ant-[A-Za-z0-9_\-]{20,}"),
    ("OPENAI_API_KEY", r"sk-(?:proj-|svcacct-|admin-)?[A-Za-z0-9_\-]{20,}"),
    ("AWS_ACCESS_KEY", r"\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"),
    ("GITHUB_TOKEN", r"\b(?:ghp|gho|ghu|ghs|ghr)_[A-Za-z0-9]{36,}\b|\bgithub_pat_\w{40,}"),
    ("SLACK_TOKEN", r"\bxox[bpas]-[A-Za-z0-9\-]{10,}"),
    ("GOOGLE_API_KEY", r"\bAIza[0-9A-Za-z_\-]{35}"),
    ("JWT", r"\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]{8,}"),
    (
        "PRIVATE_KEY",
        r"-----BEGIN (?:[A-Z]+ )?PRIVATE KEY-----[\s\S]*?-----END (?:[A-Z]+ )?PRIVATE KEY-----",
    ),
)


def _options() -> re2.Options:
    options = re2.Options()
    options.log_errors = False
    return options


class PatternSet:
    """Named RE2 patterns; ``find`` gives every match of each."""

    def __init__(self, named: Iterable[tuple[str, str]], *, ignore_case: bool = False) -> None:
        options = _options()
        options.case_sensitive = not ignore_case
        self.patterns = [(name, re2.compile(regex, options)) for name, regex in named]

    def find(self, text: str) -> Iterator[Match]:
        for name, pattern in self.patterns:
            for found in pattern.finditer(text):
                if found.end() > found.start():
                    yield Match(name, found.start(), found.end())


SECRETS = PatternSet(_SECRET_SHAPES)


def custom(patterns: Iterable[GuardrailPattern]) -> PatternSet:
    return PatternSet((pattern.name, pattern.regex) for pattern in patterns)


def denylist(words: Iterable[str], patterns: Iterable[GuardrailPattern]) -> PatternSet:
    """Whole words and patterns, in any case; a word is named ``DENIED_WORD``."""
    named = [("DENIED_WORD", rf"\b{re2.escape(word)}\b") for word in words if word.strip()]
    named += [(pattern.name, pattern.regex) for pattern in patterns]
    return PatternSet(named, ignore_case=True)
