"""Tool names made safe for each provider: kept where accepted, stable, distinct."""

import pytest

from inference.providers.toolnames import (
    COHERE_NAMES,
    GEMINI_NAMES,
    LETTERS_DIGITS_DASHES,
    ToolNameRule,
    strictest,
)


def test_accepted_names_are_kept_as_they_are() -> None:
    names = ["get_weather", "files-read", "Add2"]
    assert LETTERS_DIGITS_DASHES.safe_names(names) == names


@pytest.mark.parametrize(
    ("rule", "expected"),
    [
        (LETTERS_DIGITS_DASHES, ["helper_v2", "files_read", "a_b_c", "9lives"]),
        (GEMINI_NAMES, ["helper.v2", "files.read", "a_b:c", "_9lives"]),
        (COHERE_NAMES, ["helper_v2", "files_read", "a_b_c", "_9lives"]),
    ],
)
def test_refused_characters_become_underscores(rule: ToolNameRule, expected: list[str]) -> None:
    safe = rule.safe_names(["helper.v2", "files.read", "a b:c", "9lives"])
    assert safe == expected
    assert all(rule.accepts(name) for name in safe)


def test_names_that_collide_once_made_safe_stay_distinct() -> None:
    safe = COHERE_NAMES.safe_names(["a.b", "a-b", "a_b"])
    assert safe == ["a_b", "a_b_2", "a_b_3"]


def test_long_names_are_cut_to_the_providers_limit() -> None:
    (safe,) = LETTERS_DIGITS_DASHES.safe_names(["x" * 80 + "."])
    assert len(safe) == 64 and LETTERS_DIGITS_DASHES.accepts(safe)


def test_an_agent_on_several_kinds_names_its_tools_for_all_of_them() -> None:
    both = strictest([LETTERS_DIGITS_DASHES, GEMINI_NAMES])
    names = both.safe_names(["9lives", "files.read", "a-b", "ok_name"])

    assert names == ["_9lives", "files_read", "a-b", "ok_name"]
    assert all(GEMINI_NAMES.accepts(name) for name in names)
    assert all(LETTERS_DIGITS_DASHES.accepts(name) for name in names)
    assert strictest([GEMINI_NAMES, GEMINI_NAMES]) is GEMINI_NAMES
