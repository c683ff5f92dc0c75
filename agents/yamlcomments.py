"""Keep comments above the entries they describe when entries are added or removed.

In ruamel.yaml's model the lines between two entries (blank lines, comments) are the
*tail* of the first entry: the comment token after its last scalar, whose text is the
rest of that line followed by the lines in between. The lines above the first entry of
a block collection are stored on the key that holds the collection. The functions here
move those lines when an entry is removed or appended:

- removing an entry drops the entry and the comment lines directly above it (no blank
  line in between); every other line in between stays where it was;
- appending an entry moves the tail of the old last entry (the comments before whatever
  follows the collection) below the new entry.

ruamel also stores some of those lines as the *pre-comment* of the next entry (after a
flow collection, for one); ``_normalize`` first turns those into tails so that there is
one place to look.
"""

from itertools import pairwise
from typing import Any

from ruamel.yaml.comments import CommentedMap, CommentedSeq
from ruamel.yaml.error import CommentMark
from ruamel.yaml.scalarstring import FoldedScalarString, LiteralScalarString
from ruamel.yaml.tokens import CommentToken

Node = CommentedMap | CommentedSeq
_TAIL = {CommentedMap: 2, CommentedSeq: 0}  # index of the after-value token in ca.items
_BEFORE_FIRST = 3  # index, on the parent's key, of the lines above a collection's first entry


def remove(container: Node, key: Any, parent: Node | None, name: Any) -> None:
    _normalize(container)
    keys = _keys(container)
    index = keys.index(key)
    _, after = _tail(container, key)
    if index > 0:
        previous = keys[index - 1]
        eol, before = _tail(container, previous)
        _delete(container, key)
        _set_tail(container, previous, eol, _join(_without_last_comment(before), after))
        return
    before = _take_before_first(parent, name)
    _delete(container, key)
    between = _join(_without_last_comment(before), after).lstrip("\n")
    if len(container):
        _set_before_first(parent, name, between)
    else:
        container.fa.set_flow_style()
        _append_after_value(parent, name, between)


def append(container: Node, key: Any, node: Any, parent: Node | None, name: Any) -> None:
    if container.fa.flow_style() is True and len(container):
        _add(container, key, node)
        return
    _normalize(container)
    if len(container):
        last = _keys(container)[-1]
        spaced = len(container) > 1 and _tail(container, _keys(container)[-2])[1].startswith("\n")
        eol, after = _tail(container, last)
        after += _take_ends(container[last])
        _set_tail(container, last, eol, "\n" if spaced else "")
    else:
        container.fa.set_block_style()
        after = _take_after_value(parent, name)
    _add(container, key, node)
    _set_tail(container, _keys(container)[-1], "\n", after)


def assign(container: Node, key: Any, value: Any) -> None:
    """Replace an entry's value, keeping the lines that follow the entry."""
    eol, after = _tail(container, key)
    # ruamel would re-apply the old value's scalar style (a literal block, say) to a plain str.
    if isinstance(container, CommentedMap):
        dict.__setitem__(container, key, value)
    else:
        list.__setitem__(container, key, value)
    _set_tail(container, key, eol, after)


def _take_ends(value: Any) -> str:
    """Detach the comment lines ruamel keeps at the end of the block collections ending here."""
    ends: list[str] = []
    while _is_block(value) and len(value):
        if value.ca.end:
            ends.insert(0, _lines(value.ca.end))
            value.ca.end = []
        value = value[_keys(value)[-1]]
    return "".join(ends)


def _normalize(container: Node) -> None:
    """Move the pre-comments of entries after the first into the tail of the entry before."""
    keys = _keys(container)
    for previous, key in pairwise(keys):
        slot = container.ca.items.get(key)
        if slot and slot[1]:
            eol, after = _tail(container, previous)
            _set_tail(container, previous, eol, after + _lines(slot[1]))
            slot[1] = None


def _lines(tokens: list[CommentToken]) -> str:
    """The text of full-line comment tokens, with the indentation ruamel keeps apart."""
    return "".join(
        " " * token.column + token.value if token.value.startswith("#") else token.value
        for token in tokens
    )


def _delete(container: Node, key: Any) -> None:
    del container[key]
    if isinstance(container, CommentedMap):
        container.ca.items.pop(key, None)


def _add(container: Node, key: Any, node: Any) -> None:
    if isinstance(container, CommentedMap):
        container[key] = node
    else:
        container.append(node)


def _keys(container: Node) -> list[Any]:
    return list(container) if isinstance(container, CommentedMap) else list(range(len(container)))


def _is_block(node: Any) -> bool:
    return isinstance(node, (CommentedMap, CommentedSeq)) and node.fa.flow_style() is not True


def _tail_owner(container: Node, key: Any) -> tuple[Node, Any]:
    """The (collection, key) whose after-value token ends the entry: its deepest last scalar."""
    value = container[key]
    if _is_block(value) and len(value):
        return _tail_owner(value, _keys(value)[-1])
    return container, key


def _tail(container: Node, key: Any) -> tuple[str, str]:
    """(rest of the entry's last line, the lines that follow it up to the next entry)."""
    owner, owner_key = _tail_owner(container, key)
    slot = owner.ca.items.get(owner_key)
    token = slot[_TAIL[type(owner)]] if slot else None
    if token is None:
        return "\n", ""
    text = token.value
    if _is_block_scalar(owner[owner_key]):
        return "", _lines([token])
    cut = text.find("\n") + 1 or len(text)
    return text[:cut], text[cut:]


def _is_block_scalar(value: Any) -> bool:
    """A literal or folded block ends with its own newline: its token holds only the lines after."""
    return isinstance(value, (LiteralScalarString, FoldedScalarString))


def _set_tail(container: Node, key: Any, eol: str, after: str) -> None:
    owner, owner_key = _tail_owner(container, key)
    slot = owner.ca.items.setdefault(owner_key, [None, None, None, None])
    position = _TAIL[type(owner)]
    block = _is_block_scalar(owner[owner_key])
    if block:
        eol = ""
    elif not eol:
        eol = "\n"
    text = eol + after
    if text == "" or (text == "\n" and not block):
        slot[position] = None
    elif slot[position] is not None:
        slot[position].value = text
    else:
        slot[position] = CommentToken(text, CommentMark(0), None)


def _take_before_first(parent: Node | None, name: Any) -> str:
    slot = _parent_slot(parent, name)
    tokens = slot[_BEFORE_FIRST] if slot else None
    if not tokens:
        return ""
    text = _lines(tokens)
    tokens.clear()
    return text


def _set_before_first(parent: Node | None, name: Any, text: str) -> None:
    slot = _parent_slot(parent, name)
    if slot is None or not text:
        return
    if slot[_BEFORE_FIRST] is None:
        slot[_BEFORE_FIRST] = []
    slot[_BEFORE_FIRST][:] = [CommentToken(text, CommentMark(0), None)]


def _take_after_value(parent: Node | None, name: Any) -> str:
    slot = _parent_slot(parent, name)
    token = slot[2] if slot else None
    if slot is None or token is None:
        return ""
    text: str = token.value
    cut = text.find("\n") + 1 or len(text)
    token.value = text[:cut]
    if token.value == "\n":
        slot[2] = None
    return text[cut:]


def _append_after_value(parent: Node | None, name: Any, text: str) -> None:
    slot = _parent_slot(parent, name)
    if slot is None or not text:
        return
    if slot[_BEFORE_FIRST] is not None:
        slot[_BEFORE_FIRST] = None
    if slot[2] is None:
        slot[2] = CommentToken("\n" + text, CommentMark(0), None)
    else:
        slot[2].value += text


def _parent_slot(parent: Node | None, name: Any) -> list[Any] | None:
    if not isinstance(parent, CommentedMap):
        return None
    slot: list[Any] = parent.ca.items.setdefault(name, [None, None, None, None])
    return slot


def _without_last_comment(text: str) -> str:
    """``text`` without its last run of comment lines (the ones directly above an entry)."""
    lines = text.splitlines(keepends=True)
    while lines and lines[-1].strip().startswith("#"):
        lines.pop()
    return "".join(lines)


def _join(before: str, after: str) -> str:
    """Lines before a removed entry, then lines after it, with one blank gap, not two."""
    if after.startswith("\n") or not after.strip():
        lines = before.splitlines(keepends=True)
        while lines and not lines[-1].strip():
            lines.pop()
        before = "".join(lines)
    return before + after
