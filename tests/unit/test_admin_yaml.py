"""Round-trip edits of the original service's configs: golden diffs, comments kept in place.

Each golden is the unified diff an edit makes to one of the configs in the original
service's format under tests/configs.
"""

import difflib
from collections.abc import Callable
from pathlib import Path

import pytest
from ruamel.yaml.comments import CommentedMap

from agents import masking
from agents.yamldoc import (
    Document,
    NotRepresentable,
    append_entry,
    merge,
    parse,
    patch_layout,
    remove_entry,
    to_node,
)
from tests.configs import ORIGINAL_EXAMPLE, ORIGINAL_STARTER

EXAMPLE = ORIGINAL_EXAMPLE
TEMPLATE = ORIGINAL_STARTER


def edited(path: Path, edit: Callable[[CommentedMap], None]) -> str:
    """The unified diff (no header) that ``edit`` of the round-trip document makes."""
    text = path.read_text()
    document = Document(text)
    edit(document.root)
    after = document.text()
    lines = difflib.unified_diff(text.splitlines(True), after.splitlines(True), n=1)
    return "".join(list(lines)[2:])


@pytest.mark.parametrize("path", [EXAMPLE, TEMPLATE], ids=["example", "init_template"])
def test_document_unchanged_is_byte_identical(path: Path) -> None:
    text = path.read_text()

    assert Document(text).text() == text


def test_append_agent_goes_above_the_next_sections_comment() -> None:
    agent = {"name": "new", "provider": "openai", "model": "m", "judges": ["quality"]}

    diff = edited(EXAMPLE, lambda root: append_entry(root["agents"], 4, agent, root, "agents"))

    assert diff == (
        "@@ -108,2 +108,8 @@\n"
        " \n"
        "+  - name: new\n"
        "+    provider: openai\n"
        "+    model: m\n"
        "+    judges:\n"
        "+      - quality\n"
        "+\n"
        " # A/B tests: clients send the experiment's name as `model`.\n"
    )


def test_remove_middle_agent_takes_only_its_own_comment() -> None:
    diff = edited(EXAMPLE, lambda root: remove_entry(root["agents"], 1, root, "agents"))

    removed = [line for line in diff.splitlines() if line.startswith("-")]
    assert removed[0] == "-  - name: gpt-assistant"
    assert "-    # Only some of its tools (names as the server lists them)." in removed
    assert not [line for line in diff.splitlines() if line.startswith("+")]
    assert "\n   - name: gemini-assistant\n" in diff  # still one blank line above it


def test_remove_first_judge_keeps_the_next_judges_comment() -> None:
    diff = edited(EXAMPLE, lambda root: remove_entry(root["judges"], 0, root, "judges"))

    assert "-  # Runs on every reply: a cheap model, averaged over many turns.\n" in diff
    assert "   # Runs on a tenth of the replies: a stronger and dearer model.\n" in diff
    assert "+" not in "".join(line[0] for line in diff.splitlines() if line)


def test_remove_last_mcp_server_keeps_the_comments_below_it() -> None:
    text = EXAMPLE.read_text()
    document = Document(text)
    remove_entry(document.root["mcp"], "greeter", document.root, "mcp")
    after = document.text()

    assert "mcp: {}\n" in after
    for comment in ("# A server reached over HTTP instead:", "# Judges score replies"):
        assert after.index("mcp: {}") < after.index(comment) < after.index("judges:")
    assert parse(after)["judges"] == parse(text)["judges"]


def test_append_provider_goes_above_the_next_sections_comment() -> None:
    diff = edited(
        EXAMPLE,
        lambda root: append_entry(root["providers"], "groq", {"api_key": "k"}, root, "providers"),
    )

    assert diff == (
        "@@ -33,2 +33,4 @@\n     api_key: gemini-example-key\n+  groq:\n+    api_key: k\n \n"
    )


def test_new_section_goes_above_the_trailing_comment_sections() -> None:
    diff = edited(EXAMPLE, lambda root: append_entry(root, "history", {"max_messages": 20}))

    assert diff == (
        "@@ -117,2 +117,4 @@\n         weight: 0.5\n+history:\n+  max_messages: 20\n \n"
    )
    after = Document(EXAMPLE.read_text())
    append_entry(after.root, "history", {"max_messages": 20})
    text = after.text()
    assert text.index("max_messages: 20") < text.index("# --- Smoke tests")


def test_merge_changes_only_the_changed_lines_and_keeps_aligned_values() -> None:
    def edit(root: CommentedMap) -> None:
        judge = dict(parse(EXAMPLE.read_text())["judges"][0], model="gpt-4.1-mini")
        merge(root["judges"][0], judge, root["judges"], 0)

    assert edited(EXAMPLE, edit) == (
        "@@ -56,3 +56,3 @@\n"
        "     provider: openai\n"
        "-    model: gpt-4o-mini\n"
        "+    model: gpt-4.1-mini\n"
        "     sampling_rate: 1.0\n"
    )


def test_merge_multi_line_preamble_becomes_a_literal_block_before_the_blank_line() -> None:
    agent = {
        "name": "gpt-assistant",
        "provider": "openai",
        "model": "gpt-4o",
        "preamble": "Line one\nline two\n",
    }

    diff = edited(EXAMPLE, lambda root: merge(root["agents"][1], agent, root["agents"], 1))

    assert diff.endswith("+    preamble: |\n+      Line one\n+      line two\n \n")
    assert "-    # Only some of its tools (names as the server lists them).\n" in diff


def test_merge_block_preamble_to_one_line_keeps_the_comment_after_it() -> None:
    def edit(root: CommentedMap) -> None:
        agent = dict(parse(EXAMPLE.read_text())["agents"][3], preamble="Review code.")
        merge(root["agents"][3], agent, root["agents"], 3)

    diff = edited(EXAMPLE, edit)

    assert "+    preamble: Review code.\n     # Two judges:" in diff


def test_patch_layout_gives_the_edit_when_the_original_is_not_line_for_line() -> None:
    original = "a:   1\nb:   2\n"
    baseline = "a: 1\nb: 2\nc: 3\n"  # not line for line: the original cannot be patched

    assert patch_layout(original, baseline, "a: 1\nb: 5\n") == "a: 1\nb: 5\n"


def test_patch_layout_keeps_the_original_lines_the_edit_left_alone() -> None:
    original = "a:   1  # one\nb:   2\n"
    baseline = "a: 1  # one\nb: 2\n"

    assert patch_layout(original, baseline, "a: 1  # one\nb: 5\n") == "a:   1  # one\nb: 5\n"


def test_edit_that_would_not_read_back_is_not_representable() -> None:
    document = Document(EXAMPLE.read_text())
    document.root["agents"][0]["preamble"] = to_node("one\r\ntwo")

    with pytest.raises(NotRepresentable, match="would not read back"):
        document.text()


def test_mask_shows_prefix_and_suffix_only_of_long_api_keys() -> None:
    assert masking.mask("sk-ant-your-key-here", "api_key") == "sk-…here"
    assert masking.mask("sk-ant-your-key-her", "api_key") == "********"
    assert masking.mask("${OPENAI_API_KEY}", "api_key") == "${OPENAI_API_KEY}"
    assert masking.mask("short", "api_key") == "********"


@pytest.mark.parametrize("key", ["password", "client_secret"])
def test_mask_hides_passwords_and_client_secrets_whole(key: str) -> None:
    assert masking.mask("Correct-Horse", key) == "********"
    assert masking.mask("a-very-long-client-secret-0123456789", key) == "********"
    assert masking.mask("${ADMIN_PASSWORD}", key) == "${ADMIN_PASSWORD}"


def test_keep_secret_restores_only_the_masked_form_of_the_stored_value() -> None:
    stored = "sk-ant-your-key-here"
    path = ("providers", "openai", "api_key")

    assert masking.keep_secret("sk-…here", stored, path) == stored
    assert masking.keep_secret("sk-new-key-0123456789", stored, path) == "sk-new-key-0123456789"


@pytest.mark.parametrize("sent", ["sk-…abcd", "********", "x********"])
def test_keep_secret_refuses_a_mask_of_another_secret(sent: str) -> None:
    with pytest.raises(masking.ForeignMask, match=r"^providers\.openai\.api_key: looks like"):
        masking.keep_secret(sent, "sk-ant-your-key-here", ("providers", "openai", "api_key"))


def test_mask_config_masks_provider_keys_and_auth_passwords() -> None:
    data = {
        "providers": {
            "openai": {
                "api_key": "sk-openai-0123456789",
                "billing": {"admin_key": "sk-admin-0123456789abcd", "project": "proj_1"},
            }
        },
        "auth": {"admin": {"basic": {"username": "admin", "password": "pbkdf2_sha256$1$abc$def"}}},
    }

    masking.mask_config(data)

    assert data["providers"]["openai"]["api_key"] == "sk-…6789"
    assert data["providers"]["openai"]["billing"] == {"admin_key": "sk-…abcd", "project": "proj_1"}
    assert data["auth"]["admin"]["basic"] == {"username": "admin", "password": "********"}
