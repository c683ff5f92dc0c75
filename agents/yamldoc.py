"""Round-trip editing of the config file: change what was asked, keep every other byte.

ruamel.yaml keeps comments, key order and quoting, and this module adds what it does
not do by itself:

- Layout. ruamel normalises some spacing (aligned values, for one), so ``Document.text``
  patches only the lines an edit changed into the original text, and falls back to
  ruamel's own output when the patched text would not mean the same.
- Comment ownership. ruamel stores the comment lines above an entry on the entry before
  it. ``remove_entry`` and ``append_entry`` move those lines so that every comment stays
  above the entry it was written for (``yamlcomments``).
- Scalar style. An unchanged value keeps its exact spelling; a changed string keeps its
  block or quoting style, and a new multi-line string becomes a literal block.
"""

import difflib
import io
import math
import re
from typing import Any

from ruamel.yaml import YAML
from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.compat import ordereddict
from ruamel.yaml.error import MarkedYAMLError, YAMLError
from ruamel.yaml.scalarbool import ScalarBoolean
from ruamel.yaml.scalarstring import (
    DoubleQuotedScalarString,
    FoldedScalarString,
    LiteralScalarString,
    SingleQuotedScalarString,
)

from agents import masking, yamlcomments

Node = CommentedMap | CommentedSeq


def parse(text: str) -> Any:
    """Plain data from YAML text (YAML 1.2, as the config loader reads it)."""
    try:
        return YAML(typ="safe", pure=True).load(text)
    except ValueError as error:
        # A scalar that is not what its tag says (!!int x): the constructor's own error,
        # not YAML's, and its message quotes the value, which may be a secret.
        raise YAMLError("a value is not what its tag (!!int, !!float, …) says") from error


_QUOTED_VALUES = re.compile(r' with value ".*?"( \(original value: ".*?"\))?')
_QUOTED = re.compile(r"'([^']*)'|\"([^\"]*)\"")
# The rest of a line after a key that holds a secret, in block or flow style.
_SECRET_LINE = re.compile(
    r"\b(?:api_key|admin_key|password|client_secret)['\"]?\s*:(.*)$", re.MULTILINE
)


def describe_yaml_error(error: YAMLError) -> str:
    """Where and why YAML text does not parse, on one line.

    The parser's own message quotes the offending line (which may hold a secret) under
    a caret, with the noise of its input name; this keeps only position and reason, and
    masks what it quotes from a line that holds a secret (an alias or tag name there).
    """
    if not isinstance(error, MarkedYAMLError):
        return str(error).splitlines()[0] if str(error) else type(error).__name__
    problem = _QUOTED_VALUES.sub("", error.problem or error.context or "unreadable text")
    mark = error.problem_mark or error.context_mark
    where = f"line {mark.line + 1}, column {mark.column + 1}: " if mark is not None else ""
    context = ""
    if error.context and error.problem and error.context_mark is not None:
        context = f" ({error.context} started on line {error.context_mark.line + 1})"
    return _without_secrets(f"{where}{problem}{context}", getattr(mark, "buffer", None))


def _without_secrets(description: str, text: str | None) -> str:
    if not text:
        return description
    secret_lines = [match.group(1) for match in _SECRET_LINE.finditer(text)]

    def masked(match: re.Match[str]) -> str:
        quoted = match.group(1) if match.group(1) is not None else match.group(2)
        if len(quoted) > 1 and any(quoted in line for line in secret_lines):
            return f"'{masking.HIDDEN}'"
        return match.group()

    return _QUOTED.sub(masked, description)


class NotRepresentable(ValueError):
    """ruamel wrote text it cannot read back, or that reads back as something else
    (some control characters, for one)."""


class Document:
    """One config file loaded round-trip; edit ``root`` in place, then take ``text()``."""

    def __init__(self, text: str) -> None:
        self.original = text
        self._yaml = _round_trip_yaml(text)
        root = self._yaml.load(text)
        if root is None:
            root = CommentedMap()
        if not isinstance(root, CommentedMap):
            raise ValueError("the config must be a mapping of sections")
        self.root: CommentedMap = root
        # ruamel's rendering of the file as it is, taken before any edit.
        self._baseline = _baselines.get(text) or (self._dump(root) if text.strip() else "")

    def text(self) -> str:
        return self.render()[0]

    def render(self) -> tuple[str, Any]:
        """The edited file's text and its plain data: the text is read back (once) to make
        sure it means what was edited, so the caller need not parse it again."""
        edited = self._dump(self.root)
        expected = plain(self.root)
        if self.original.strip():
            patched = patch_layout(self.original, self._baseline, edited)
            if patched != edited:
                data = _parsed_or_none(patched)
                if data is not None and _same(data, expected):
                    _remember_baseline(patched, edited)
                    return patched, data
        try:
            reread = parse(edited)
        except YAMLError as error:
            raise NotRepresentable(f"the change cannot be written as YAML: {error}") from error
        if not _same(reread, expected):
            raise NotRepresentable(
                "the change cannot be written as YAML: it would not read back as sent "
                "(a string holds characters YAML changes when it reads them)"
            )
        _remember_baseline(edited, edited)
        return edited, reread

    def _dump(self, root: CommentedMap) -> str:
        out = io.StringIO()
        self._yaml.dump(root, out)
        return out.getvalue()


def patch_layout(original: str, baseline: str, edited: str) -> str:
    """Apply the change from ``baseline`` to ``edited`` (two ruamel dumps) to ``original``.

    ``baseline`` is ruamel's rendering of the unchanged file: where it has as many lines
    as the original, line i of one is line i of the other, so unchanged lines can be
    taken from the original byte for byte. The result may not mean the same as
    ``edited`` (callers check).
    """
    original_lines = original.splitlines(keepends=True)
    baseline_lines = baseline.splitlines(keepends=True)
    edited_lines = edited.splitlines(keepends=True)
    if len(original_lines) != len(baseline_lines):
        return edited
    # The unchanged lines before and after the change are matched in linear time; only the
    # lines between them are diffed. A SequenceMatcher over the whole file was quadratic
    # when many lines are alike (a long block scalar): minutes for a write on a 200 KB file.
    head = _common_run(baseline_lines, edited_lines)
    tail = _common_run(baseline_lines[head:][::-1], edited_lines[head:][::-1])
    end, edited_end = len(baseline_lines) - tail, len(edited_lines) - tail
    matcher = difflib.SequenceMatcher(None, baseline_lines[head:end], edited_lines[head:edited_end])
    patched = original_lines[:head]
    for tag, i1, i2, j1, j2 in matcher.get_opcodes():
        if tag == "equal":
            patched.extend(original_lines[head + i1 : head + i2])
        else:
            patched.extend(edited_lines[head + j1 : head + j2])
    patched.extend(original_lines[end:])
    return "".join(patched)


def _common_run(first: list[str], second: list[str]) -> int:
    """How many items the two lists share from their start."""
    count = 0
    for a, b in zip(first, second, strict=False):
        if a != b:
            break
        count += 1
    return count


# Baselines of recently written texts, so that the next write of a file need not dump it
# once more. ruamel renders a text it wrote as that text (its round trip is byte-identical),
# and a text patched into the file's own layout as the edited rendering it was patched
# from. Were a remembered baseline ever off, only layout would suffer: ``render`` checks
# that what it returns reads back as edited.
_baselines: dict[str, str] = {}
_BASELINES_KEPT = 4


def _remember_baseline(written: str, rendering: str) -> None:
    _baselines[written] = rendering
    while len(_baselines) > _BASELINES_KEPT:
        del _baselines[next(iter(_baselines))]


def _parsed_or_none(text: str) -> Any:
    try:
        return parse(text)
    except Exception:
        return None


def plain(node: Any) -> Any:
    """Plain dicts, lists, str, int, float, bool and None from round-trip nodes."""
    if isinstance(node, dict):
        return {plain(key): plain(value) for key, value in node.items()}
    if isinstance(node, list):
        return [plain(item) for item in node]
    if isinstance(node, (bool, ScalarBoolean)):
        return bool(node)
    for kind in (str, int, float):
        if isinstance(node, kind):
            return kind(node)
    return node


def _same(left: Any, right: Any) -> bool:
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left):
        return math.isnan(right)
    if isinstance(left, dict) and isinstance(right, dict):
        return list(left) == list(right) and all(_same(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(map(_same, left, right))
    return _same_scalar(left, right)


def _round_trip_yaml(text: str) -> YAML:
    yaml = YAML()
    yaml.preserve_quotes = True
    yaml.width = 4096
    mapping, sequence, offset = guess_indent(text)
    yaml.indent(mapping=mapping, sequence=sequence, offset=offset)
    return yaml


def guess_indent(text: str) -> tuple[int, int, int]:
    """(mapping, sequence, offset) indentation of the file's block collections."""
    mapping = offset = None
    previous: tuple[int, str] | None = None
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#") or stripped.startswith("---"):
            continue
        indent = len(line) - len(line.lstrip(" "))
        if previous and previous[1].endswith(":") and indent > previous[0]:
            step = indent - previous[0]
            if stripped.startswith("- ") and offset is None:
                offset = step
            elif not stripped.startswith("- ") and mapping is None:
                mapping = step
        if mapping is not None and offset is not None:
            break
        previous = (indent, stripped)
    mapping = mapping or 2
    offset = 2 if offset is None else offset
    return mapping, offset + 2, offset


def merge(old: Any, new: Any, parent: Node | None = None, name: Any = None) -> Any:
    """``new`` as a node, reusing ``old``'s node (its comments and style) where it can.

    ``parent``/``name`` locate ``old`` (comments above its first entry live there).
    """
    if isinstance(old, CommentedMap) and isinstance(new, dict):
        for key, value in new.items():
            if key in old:
                replace_entry(old, key, value)
        for key in [key for key in old if key not in new]:
            remove_entry(old, key, parent, name)
        for key, value in new.items():
            if key not in old:
                append_entry(old, key, value, parent, name)
        return old
    if isinstance(old, CommentedSeq) and isinstance(new, list):
        for index, value in enumerate(new[: len(old)]):
            replace_entry(old, index, value)
        while len(old) > len(new):
            remove_entry(old, len(old) - 1, parent, name)
        for value in new[len(old) :]:
            append_entry(old, len(old), value, parent, name)
        return old
    if _same_scalar(old, new):
        return old
    if isinstance(old, str) and isinstance(new, str):
        return _restyle(old, new)
    return to_node(new)


def replace_entry(container: Node, key: Any, value: Any) -> None:
    """``container[key] = value``, merged into the existing node."""
    current = container[key]
    merged = merge(current, value, container, key)
    if merged is not current:
        yamlcomments.assign(container, key, merged)


def append_entry(
    container: Node, key: Any, value: Any, parent: Node | None = None, name: Any = None
) -> None:
    """Add an entry at the end of a map (under ``key``) or a sequence (``key`` unused)."""
    yamlcomments.append(container, key, to_node(value), parent, name)


def remove_entry(container: Node, key: Any, parent: Node | None = None, name: Any = None) -> None:
    """Delete an entry and the comment lines directly above it; keep every other comment."""
    yamlcomments.remove(container, key, parent, name)


def set_unstyled(container: CommentedMap, key: Any, value: str) -> None:
    """``container[key] = value`` in the style the dumper picks, not the old value's."""
    ordereddict.__setitem__(container, key, value)


def to_node(value: Any) -> Any:
    if isinstance(value, dict):
        node = CommentedMap()
        for key, item in value.items():
            node[key] = to_node(item)
        return node
    if isinstance(value, list):
        return CommentedSeq([to_node(item) for item in value])
    if isinstance(value, str) and "\n" in value:
        return LiteralScalarString(value)
    return value


def _same_scalar(old: Any, new: Any) -> bool:
    if isinstance(old, (dict, list)) or isinstance(new, (dict, list)):
        return False
    if isinstance(old, bool) != isinstance(new, bool):
        return False
    if isinstance(old, str) != isinstance(new, str):
        return False
    return bool(old == new)


_STYLES = (
    LiteralScalarString,
    FoldedScalarString,
    SingleQuotedScalarString,
    DoubleQuotedScalarString,
)


def _restyle(old: str, new: str) -> str:
    styled: str  # a subclass of str (ruamel types the constructors as returning Any)
    if "\n" in new:
        styled = (
            FoldedScalarString(new)
            if isinstance(old, FoldedScalarString)
            else LiteralScalarString(new)
        )
        return styled
    for style in _STYLES[2:]:
        if isinstance(old, style):
            styled = style(new)
            return styled
    return new
