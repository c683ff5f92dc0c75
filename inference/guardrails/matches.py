"""What a guardrail found in a text: spans named by their entity, never kept beyond the
check that found them (events name entities and counts only)."""

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass


@dataclass(frozen=True)
class Match:
    entity: str
    start: int
    end: int


def without_overlaps(matches: Iterable[Match]) -> list[Match]:
    """The matches in text order, a match overlapping an earlier (or, at the same start, a
    longer) one dropped."""
    kept: list[Match] = []
    for match in sorted(matches, key=lambda match: (match.start, match.start - match.end)):
        if not kept or match.start >= kept[-1].end:
            kept.append(match)
    return kept


def counted(matches: Iterable[Match]) -> dict[str, int]:
    """How many of each entity: what an event says of the matches."""
    return dict(Counter(match.entity for match in matches))
