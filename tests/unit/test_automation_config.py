"""The config rules of automation (docs/automation.md): triggers and smoke tests, each
problem reported with its path; and the pieces with logic: cron minutes, signatures."""

import pytest

from agents.loader import ConfigError, load_config_text
from inference.automation import schedule
from inference.automation.signing import Refusal, Signed, signature, signed_headers, verify

BASE = """\
providers: {openai: {api_key: x}}
agents:
  - {name: a, provider: openai, model: m}
  - {name: p, provider: openai, model: m}
judges: [{name: j, provider: openai, model: m, rubrics: {x: y}}]
"""


def problems(extra: str) -> list[str]:
    try:
        load_config_text(BASE + extra)
    except ConfigError as error:
        return error.problems
    return []


def test_valid_triggers_and_smoke_tests_load() -> None:
    assert (
        problems("""\
triggers:
  - {name: nightly, agent: a, user: ops, message: "Report {{ due_at }}", schedule: "0 3 * * 1-5"}
  - name: orders
    agent: a
    user: ops
    message: "Order {{ body.id }}"
    webhook: {secret: s3cret}
    deliver: {url: "https://example.com/in", secret: other}
  - {name: boot, agent: a, user: ops, message: hi, on_start: true}
smoke_tests:
  - {name: st, agent: a, persona: p, opening: Hi, turns: 1, judges: [j], min_score: 10}
""")
        == []
    )


@pytest.mark.parametrize(
    ("trigger", "problem"),
    [
        (
            '{name: t, agent: a, user: u, message: m, schedule: "* * * *"}',
            "triggers[0].schedule: '* * * *' is not a cron schedule of 5 fields "
            "(minute hour day month weekday)",
        ),
        (
            '{name: t, agent: a, user: u, message: m, schedule: "61 * * * *"}',
            "triggers[0].schedule: '61 * * * *' is not a valid cron schedule",
        ),
        (
            '{name: t, agent: a, user: u, message: m, schedule: "* * * * * *"}',
            "triggers[0].schedule: '* * * * * *' is not a cron schedule of 5 fields "
            "(minute hour day month weekday)",
        ),
        (
            "{name: t, agent: nobody, user: u, message: m, on_start: true}",
            "triggers[0].agent: agent or experiment 'nobody' is not defined",
        ),
        (
            "{name: t, agent: a, user: u, message: m, webhook: {}}",
            "triggers[0].webhook.secret: must be set (requests are signed with it)",
        ),
        (
            "{name: t, agent: a, user: u, message: m}",
            "triggers[0]: must have exactly one of schedule, webhook or on_start: true",
        ),
        (
            '{name: t, agent: a, user: u, message: m, on_start: true, schedule: "* * * * *"}',
            "triggers[0]: must have exactly one of schedule, webhook or on_start: true",
        ),
        (
            "{name: t, agent: a, user: u, message: '{% if %}', on_start: true}",
            "triggers[0].message: not a valid template: Unexpected end of expression in if tag.",
        ),
        (
            "{name: t, agent: a, user: u, message: m, on_start: true, deliver: {url: ftp://x, secret: s}}",
            "triggers[0].deliver.url: must be an http:// or https:// URL",
        ),
        (
            "{name: t, agent: a, user: u, message: m, on_start: true, deliver: {url: 'http://x'}}",
            "triggers[0].deliver.secret: must be set (deliveries are signed with it)",
        ),
        (
            "{name: 't/x', agent: a, user: u, message: m, on_start: true}",
            "triggers[0].name: 't/x' is not a valid name (names are 1 to 64 letters, digits, "
            "'.', '_', ':', '@' or '-', starting with a letter or a digit)",
        ),
    ],
)
def test_each_trigger_rule_names_its_path(trigger: str, problem: str) -> None:
    assert problems(f"triggers:\n  - {trigger}\n") == [problem]


def test_duplicate_trigger_names_are_refused() -> None:
    one = "{name: t, agent: a, user: u, message: m, on_start: true}"
    assert problems(f"triggers: [{one}, {one}]\n") == ["triggers[1].name: duplicate name 't'"]


@pytest.mark.parametrize(
    ("fields", "problem"),
    [
        (
            "agent: x, persona: p, judges: [j]",
            "smoke_tests[0].agent: agent or experiment 'x' is not defined",
        ),
        ("agent: a, persona: x, judges: [j]", "smoke_tests[0].persona: agent 'x' is not defined"),
        ("agent: a, persona: p, judges: [k]", "smoke_tests[0].judges[0]: judge 'k' is not defined"),
        (
            "agent: a, persona: p, judges: [j], turns: 0",
            "smoke_tests[0].turns: must be at least 1, got 0",
        ),
        (
            "agent: a, persona: p, judges: [j], min_score: 10.5",
            "smoke_tests[0].min_score: must be between 0 and 10, got 10.5",
        ),
        (
            "agent: a, persona: p, judges: [j], min_score: -1",
            "smoke_tests[0].min_score: must be between 0 and 10, got -1.0",
        ),
        (
            "agent: a, persona: p, min_score: 5",
            "smoke_tests[0].min_score: needs at least one judge (their scores decide)",
        ),
    ],
)
def test_each_smoke_test_rule_names_its_path(fields: str, problem: str) -> None:
    assert problems(f"smoke_tests:\n  - {{name: s, opening: Hi, {fields}}}\n") == [problem]


def test_tasks_concurrency_is_at_least_one() -> None:
    assert problems("limits: {tasks_concurrency: 0}\n") == [
        "limits.tasks_concurrency: input should be greater than or equal to 1"
    ]


def test_a_minute_is_due_by_its_cron_time() -> None:
    minute = 29_000_000  # 2025-02-19T21:20 UTC
    assert schedule.slot_of(minute) == "2025-02-19T21:20"
    assert schedule.due("*/5 * * * *", minute)
    assert not schedule.due("*/7 * * * *", minute)
    assert schedule.next_fire_at("0 3 * * *", now=minute * 60 + 30).isoformat() == (
        "2025-02-20T03:00:00+00:00"
    )


NOW = 1_750_000_000.0


def code_of(outcome: Signed | Refusal) -> str:
    return outcome.code if isinstance(outcome, Refusal) else "signed"


def test_a_signature_verifies_only_for_its_body_timestamp_and_secret() -> None:
    stamp = str(int(NOW))
    header = signature("k", stamp, b'{"a": 1}')
    assert header.startswith("sha256=") and len(header) == 7 + 64
    assert verify("k", b'{"a": 1}', header, stamp, NOW) == Signed(header, int(NOW))
    assert code_of(verify("k", b'{"a": 2}', header, stamp, NOW)) == "invalid_signature"
    assert code_of(verify("other", b'{"a": 1}', header, stamp, NOW)) == "invalid_signature"
    assert code_of(verify("k", b'{"a": 1}', None, stamp, NOW)) == "invalid_signature"
    assert code_of(verify("", b"", signature("", stamp, b""), stamp, NOW)) == "invalid_signature"
    later = str(int(NOW) + 1)  # the timestamp is signed: another one does not verify
    assert code_of(verify("k", b'{"a": 1}', header, later, NOW)) == "invalid_signature"


@pytest.mark.parametrize(
    ("age", "outcome"),
    [
        (0, "signed"),
        (300, "signed"),
        (301, "stale_timestamp"),
        (-60, "signed"),
        (-61, "stale_timestamp"),
    ],
)
def test_a_timestamp_is_accepted_from_300_s_before_to_60_s_after_now(
    age: int, outcome: str
) -> None:
    headers = signed_headers("k", b"{}", now=NOW - age)
    signed = verify("k", b"{}", headers["X-Gateway-Signature"], headers["X-Gateway-Timestamp"], NOW)
    assert code_of(signed) == outcome


@pytest.mark.parametrize(
    "stamp",
    [
        None,
        "",
        "soon",
        "1.5e9",
        "-5",
        "\u0661\u0667\u0665\u0660\u0660\u0660\u0660\u0660\u0660\u0660",
        "9" * 5000,
    ],
)
def test_a_timestamp_that_is_not_unix_seconds_is_refused(stamp: str | None) -> None:
    header = signature("k", stamp or "", b"{}")
    assert code_of(verify("k", b"{}", header, stamp, NOW)) == "invalid_timestamp"
