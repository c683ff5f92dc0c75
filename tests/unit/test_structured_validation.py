"""Checking a reply against ``response_format`` and phrasing the repair turn."""

import pytest

from inference.neutral.types import ChatRequest, Message, ResponseFormat
from inference.structured.repair import strip_fence, validation_errors, with_repair_turn

PERSON = ResponseFormat(
    kind="json_schema",
    schema={
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "tags": {"type": "array", "items": {"type": "string"}},
        },
        "required": ["name"],
    },
)
JSON_OBJECT = ResponseFormat(kind="json_object")


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('{"a": 1}', '{"a": 1}'),
        ('  {"a": 1}\n', '{"a": 1}'),
        ('```json\n{"a": 1}\n```', '{"a": 1}'),
        ('```\n{"a": 1}\n```\n', '{"a": 1}'),
        ('\n```JSON\n{\n  "a": 1\n}```', '{\n  "a": 1\n}'),
        # Only one surrounding fence is taken off; text around a fence is left alone.
        ('Here it is: ```json\n{"a": 1}\n```', 'Here it is: ```json\n{"a": 1}\n```'),
    ],
)
def test_strip_fence_removes_one_surrounding_code_fence(text: str, expected: str) -> None:
    assert strip_fence(text) == expected


def test_validation_errors_accepts_a_matching_reply() -> None:
    assert validation_errors('{"name": "Ana", "tags": ["x"]}', PERSON) == []


def test_validation_errors_names_each_failing_location() -> None:
    errors = validation_errors('{"tags": ["x", 2]}', PERSON)

    assert errors == [
        "at (root): 'name' is a required property",
        "at tags/1: 2 is not of type 'string'",
    ]


def test_validation_errors_reports_text_that_is_not_json() -> None:
    [error] = validation_errors("Sure! Ana is 31.", PERSON)

    assert error.startswith("the reply is not valid JSON (Expecting value")


def test_json_object_mode_wants_an_object() -> None:
    assert validation_errors('{"any": "thing"}', JSON_OBJECT) == []
    assert validation_errors("[1, 2]", JSON_OBJECT) == ["the reply is JSON but not an object"]


def test_repair_turn_replays_the_invalid_reply_and_lists_the_errors() -> None:
    request = ChatRequest(
        model="m", system="s", messages=(Message("user", "Who?"),), response_format=PERSON
    )

    repaired = with_repair_turn(
        request, '{"tags": []}', ["at (root): 'name' is a required property"]
    )

    assert repaired.messages[:2] == (Message("user", "Who?"), Message("assistant", '{"tags": []}'))
    last = repaired.messages[2]
    assert last.role == "user"
    assert "- at (root): 'name' is a required property" in last.content
    assert (repaired.system, repaired.response_format) == ("s", PERSON)
