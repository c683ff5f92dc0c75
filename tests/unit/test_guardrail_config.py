"""The guardrails' config rules (docs/guardrails.md): each broken alone, reported with
its path."""

from collections.abc import Callable
from typing import Any

import pytest

from agents.loader import load_config_data
from tests.unit.test_config_validation import problems_after, valid_config

GUARDRAILS = [
    {"name": "pii", "kind": "pii", "action": "redact", "entities": ["EMAIL_ADDRESS"]},
    {"name": "secrets", "kind": "secrets", "on": ["input", "output", "tool_results"]},
    {"name": "words", "kind": "denylist", "words": ["bluebird"], "action": "warn"},
    {"name": "loops", "kind": "loop", "max_repeats": 4},
    {"name": "judged", "kind": "judge", "agent": "other", "on": ["output"]},
    {"name": "moderated", "kind": "moderation", "provider": "openai", "threshold": 0.4},
]


def guarded(change: Callable[[list[dict[str, Any]]], None]) -> Callable[[dict[str, Any]], None]:
    def apply(data: dict[str, Any]) -> None:
        # The fixture's password is "secret": problems would show "secrets" masked.
        data["auth"]["proxy"]["basic"]["password"] = "hunter2-hunter2"
        data["guardrails"] = [dict(guard) for guard in GUARDRAILS]
        data["agents"][0]["guardrails"] = ["pii", "loops"]
        change(data["guardrails"])

    return apply


def test_guardrails_of_every_kind_load_with_their_defaults() -> None:
    data = valid_config()
    guarded(lambda guards: None)(data)
    config = load_config_data(data)
    secrets = config.guardrail("secrets")
    assert secrets is not None and secrets.action == "block" and secrets.stream_window == 200
    words = config.guardrail("words")
    assert words is not None and words.on == ["input"]
    assert config.agents[0].guardrails == ["pii", "loops"]


RULES: list[tuple[str, Callable[[list[dict[str, Any]]], None], str]] = [
    (
        "a denylist cannot redact",
        lambda guards: guards[2].update(action="redact"),
        "guardrails[2].action: only pii and secrets guardrails redact (denylist cannot)",
    ),
    (
        "unknown entity",
        lambda guards: guards[0].update(entities=["PERSON"]),
        "guardrails[0].entities: unknown entity 'PERSON' (known: EMAIL_ADDRESS, PHONE_NUMBER, "
        "CREDIT_CARD, IBAN_CODE, US_SSN, IP_ADDRESS)",
    ),
    (
        "a pattern RE2 cannot run",
        lambda guards: guards[2].update(patterns=[{"name": "X", "regex": "(?=a)b"}]),
        "guardrails[2].patterns[0].regex: not an RE2 pattern: invalid perl operator: (?=",
    ),
    (
        "a pattern's name that cannot name a placeholder",
        lambda guards: guards[2].update(patterns=[{"name": "my word", "regex": "a"}]),
        "guardrails[2].patterns[0].name: 'my word' must be upper-case letters, digits and "
        "'_' (it names placeholders)",
    ),
    (
        "an empty denylist",
        lambda guards: guards[2].update(words=[]),
        "guardrails[2]: a denylist needs words or patterns",
    ),
    (
        "a duplicate name",
        lambda guards: guards[2].update(name="pii"),
        "guardrails[2].name: duplicate name 'pii'",
    ),
    (
        "a judge without its agent",
        lambda guards: guards[4].pop("agent"),
        "guardrails[4].agent: a judge needs the agent that classifies",
    ),
    (
        "a judge's undefined agent",
        lambda guards: guards[4].update(agent="nobody"),
        "guardrails[4].agent: agent 'nobody' is not defined",
    ),
    (
        "a moderation without a provider",
        lambda guards: guards[5].pop("provider"),
        "guardrails[5].provider: a moderation guardrail needs an OpenAI-format provider",
    ),
    (
        "a moderation on a provider of another format",
        lambda guards: guards[5].update(provider="anthropic"),
        "guardrails[5].provider: provider 'anthropic' does not speak OpenAI's format "
        "(its /moderations is what is called)",
    ),
    (
        "an agent's undefined guardrail",
        lambda guards: guards.pop(3),
        "agents[0].guardrails: guardrail 'loops' is not defined",
    ),
]


@pytest.mark.parametrize(("rule", "change", "message"), RULES, ids=[rule[0] for rule in RULES])
def test_rule_reports_the_path_named_problem(
    rule: str, change: Callable[[list[dict[str, Any]]], None], message: str
) -> None:
    assert problems_after(guarded(change)) == [message]


def test_an_unknown_kind_is_refused_by_the_schema() -> None:
    problems = problems_after(guarded(lambda guards: guards[2].update(kind="regex")))
    assert problems[0] == (
        "guardrails[2].kind: input should be 'pii', 'secrets', 'denylist', 'judge', "
        "'moderation' or 'loop'"
    )


def test_a_moderation_threshold_above_1_is_refused_by_the_schema() -> None:
    problems = problems_after(guarded(lambda guards: guards[5].update(threshold=1.5)))
    assert problems[0] == "guardrails[5].threshold: input should be less than or equal to 1"
