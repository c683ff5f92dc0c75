"""The config store: the only code that writes the config file.

Every write runs the same pipeline (docs/admin.md, "The write pipeline"): under an exclusive file lock,
read the file on disk, apply the change to its round-trip YAML, validate the whole
result, write a temp file beside it, fsync, rename, record a ``ConfigRevision``, then
reload the live snapshot. A rejected write leaves the file byte for byte as it was.
"""

import contextlib
import copy
import glob
import json
import os
import re
import stat
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from filelock import Timeout
from ruamel.yaml.comments import CommentedMap
from ruamel.yaml.error import YAMLError

from agents import masking, revisions
from agents.loader import ConfigError, load_config_data, load_config_text, parse_yaml
from agents.models import ConfigRevision
from agents.resources import Resource
from agents.snapshot import ConfigHolder, file_etag
from agents.yamldoc import (
    Document,
    NotRepresentable,
    append_entry,
    describe_yaml_error,
    merge,
    parse,
    plain,
    remove_entry,
    replace_entry,
    set_unstyled,
)


class StoreError(Exception):
    """A write the store refuses; the subclass says why (the admin maps each to a status)."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class InvalidChange(StoreError):
    """The change itself is malformed (a renaming body, text a YAML file cannot hold)."""


class EntryNotFound(StoreError):
    pass


class NameTaken(StoreError):
    pass


class VersionMismatch(StoreError):
    """``If-Match`` names a version of the file or entry that is not the current one."""


class Busy(StoreError):
    """Another writer held the file lock for longer than ``LOCK_WAIT``: retry shortly."""


LOCK_WAIT = 5.0
# Every write parses and renders the whole file: the admin keeps it to a size it writes fast.
MAX_FILE_BYTES = 1024 * 1024


class Forbidden(StoreError):
    """The author may not make this change (``Author.refuse`` said why)."""


@dataclass(frozen=True)
class Author:
    """Who writes, as revisions record them, and what they may not write: ``refuse`` gets
    the config's data before and after a change, and says why it is not theirs to make
    (None: it is)."""

    name: str
    refuse: Callable[[Any, Any], str | None] | None = None


@dataclass(frozen=True)
class Written:
    """What a write left on disk: the file's new ETag and content, the revision it recorded
    (None when the change left the file as it was) and, for item writes, the entry as
    reads show it."""

    etag: str
    data: dict[str, Any]
    revision: ConfigRevision | None
    entry: dict[str, Any] | None = None
    key: str | None = None  # the entry's, for item writes


@dataclass(frozen=True)
class FileState:
    """The config as the admin reads it: the file on disk, or the last good one if invalid."""

    text: str
    data: dict[str, Any]
    etag: str


# ---- reads ------------------------------------------------------------------------------


def read_file(holder: ConfigHolder) -> FileState:
    """The file on disk when it is valid; the live snapshot's text while a hand edit is not."""
    raw = _read_bytes(holder.path)
    text = raw.decode("utf-8", errors="replace")
    snapshot = holder.snapshot
    if snapshot is not None and snapshot.text != text:
        try:
            load_config_text(text, holder.path.parent)
        except ConfigError:
            text = snapshot.text
    return FileState(text=text, data=_mapping(text), etag=file_etag(raw))


def read_raw_file(holder: ConfigHolder) -> FileState:
    """The file on disk even when it is invalid (for the config editor to fix it), as long
    as it is YAML; else the last good version."""
    raw = _read_bytes(holder.path)
    text = raw.decode("utf-8", errors="replace")
    try:
        parse(text)
    except YAMLError:
        text = holder.snapshot.text if holder.snapshot is not None else ""
    return FileState(text=text, data=_mapping(text), etag=file_etag(raw))


def _mapping(text: str) -> dict[str, Any]:
    try:
        data = parse(text) if text.strip() else {}
    except YAMLError:
        return {}
    return data if isinstance(data, dict) else {}


def entries(holder: ConfigHolder, resource: Resource) -> dict[str, dict[str, Any]]:
    return {
        key: _masked(resource, item)
        for key, item in resource.entries(read_file(holder).data).items()
    }


def entry(holder: ConfigHolder, resource: Resource, key: str) -> dict[str, Any]:
    found = resource.entries(read_file(holder).data).get(key)
    if found is None:
        raise EntryNotFound(f"{resource.singular} '{key}' does not exist")
    return _masked(resource, found)


def entry_etag(item: dict[str, Any]) -> str:
    """Version of one entry, for ``If-Match`` on its updates and deletes."""
    return file_etag(json.dumps(item, sort_keys=True, default=str).encode())


def masked_config_text(holder: ConfigHolder) -> tuple[str, str]:
    """(the file with its secrets masked, the ETag of the bytes on disk)."""
    state = read_raw_file(holder)
    return revisions.masked_text(state.text), state.etag


def masked_config_data(holder: ConfigHolder) -> tuple[dict[str, Any], str]:
    state = read_raw_file(holder)
    masking.mask_config(state.data)
    return state.data, state.etag


# ---- writes -----------------------------------------------------------------------------


def create_item(
    holder: ConfigHolder, resource: Resource, body: dict[str, Any], author: Author
) -> Written:
    _check_storable(body)
    body = dict(body)
    key = body.pop(resource.key_field, None) if not resource.is_list else body.get("name")
    if key is None and resource.key_default is not None:
        key = body.get(resource.key_default)
    if not isinstance(key, str) or not key.strip():
        raise ConfigError([f"{resource.key_field}: a non-blank string is required"])

    def edit(document: Document) -> None:
        root = document.root
        for section in resource.namespace:
            if key in _section_keys(root, section):
                raise NameTaken(f"the name '{key}' is already taken in {section}")
        _ensure_section(root, resource)
        container = root[resource.section]
        append_entry(
            container, len(container) if resource.is_list else key, body, root, resource.section
        )

    return _with_entry(_write(holder, author, edit), resource, key)


def replace_item(
    holder: ConfigHolder,
    resource: Resource,
    key: str,
    body: dict[str, Any],
    author: Author,
    if_match: str | None = None,
) -> Written:
    _check_storable(body)
    body = dict(body)
    sent_key = body.get(resource.key_field)
    if sent_key is not None and sent_key != key:
        raise InvalidChange(
            f"the body's {resource.key_field} '{sent_key}' differs from the URL's '{key}' "
            "(renaming is not supported: create the new one, then delete the old one)"
        )
    if not resource.is_list:
        body.pop(resource.key_field, None)

    def edit(document: Document) -> None:
        container, position, current = _locate(document.root, resource, key, if_match)
        target = {resource.key_field: key} if resource.is_list else {}
        target.update((name, value) for name, value in body.items() if value is not None)
        for name, value in current.items():  # fields this version does not know survive
            if name not in resource.known_fields() and name not in target:
                target[name] = value
        replace_entry(container, position, target)

    return _with_entry(_write(holder, author, edit), resource, key)


def delete_item(
    holder: ConfigHolder, resource: Resource, key: str, author: Author, if_match: str | None = None
) -> Written:
    def edit(document: Document) -> None:
        container, position, _ = _locate(document.root, resource, key, if_match)
        remove_entry(container, position, document.root, resource.section)

    return _write(holder, author, edit)


def replace_config(
    holder: ConfigHolder,
    author: Author,
    *,
    text: str | None = None,
    data: dict[str, Any] | None = None,
    if_match: str | None = None,
) -> Written:
    """Replace the whole file by YAML ``text`` (kept as sent), or the top-level sections
    ``data`` names (merged into the file; a section sent as ``null`` is removed)."""

    _check_storable(data)

    def replacement(raw: bytes) -> Change:
        # The file as GET /admin/config shows it, even when it is not UTF-8 text: the
        # secrets it masked can be restored, and the file replaced.
        original = raw.decode("utf-8", errors="replace")
        if text is not None:
            stored = _parse_or_empty(original)
            return Change(*_with_stored_secrets(text, stored), before=(original, stored))
        document = _document(original)
        stored = plain(document.root)
        sent = json.loads(json.dumps(data))
        masking.keep_config_secrets(sent, stored)
        kept = {section: value for section, value in document.root.items() if section not in sent}
        merge(
            document.root, kept | {key: value for key, value in sent.items() if value is not None}
        )
        return Change(*document.render(), before=(original, stored))

    return _write_text(holder, author, replacement, if_match)


def restore_revision(holder: ConfigHolder, revision_id: int, author: Author) -> Written:
    revision = ConfigRevision.objects.filter(pk=revision_id).first()
    if revision is None:
        raise EntryNotFound(f"revision {revision_id} does not exist")
    return _write_text(
        holder,
        Author(f"{author.name} (restored revision {revision_id})", author.refuse),
        lambda _: Change(revision.text, parse_yaml(revision.text)),
        None,
    )


# A YAML file can hold only these characters (YAML 1.2, "printable"), less NEL, LS and PS
# (U+0085, U+2028, U+2029): ruamel.yaml reads them as line breaks, so they do not read back.
_UNSTORABLE = re.compile(
    "[^\t\n\r\x20-\x7e\xa0-\u2027\u202a-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
)


def _check_storable(value: Any, path: str = "") -> None:
    """Refuse (400) text a YAML file cannot hold, before it reaches the file."""
    if isinstance(value, dict):
        for key, item in value.items():
            _check_storable(key, path)
            _check_storable(item, f"{path}.{key}" if path else str(key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            _check_storable(item, f"{path}[{index}]")
    elif isinstance(value, str) and (found := _UNSTORABLE.search(value)):
        raise InvalidChange(
            f"{path or '(body)'}: U+{ord(found.group()):04X} cannot be stored in a YAML file"
        )


# ---- the pipeline -----------------------------------------------------------------------


@dataclass(frozen=True)
class Change:
    """What a write makes of the file: its new text and data (parsed once), and the text
    and data it had before when the change parsed them (the revision's diff needs both)."""

    text: str
    data: Any
    before: tuple[str, Any] | None = None


def _write(holder: ConfigHolder, author: Author, edit: Callable[[Document], None]) -> Written:
    def apply(raw: bytes) -> Change:
        original = _file_text(raw)
        document = _document(original)
        stored = plain(document.root)
        edit(document)
        masking.keep_config_secrets(document.root, stored, _restore_secret)
        return Change(*document.render(), before=(original, stored))

    return _write_text(holder, author, apply, None)


def _write_text(
    holder: ConfigHolder, author: Author, change: Callable[[bytes], Change], if_match: str | None
) -> Written:
    """Write what ``change`` makes of the bytes on disk, through the whole pipeline."""
    path = holder.path
    with _locked(path):
        raw = _read_bytes(path)
        if not matches(if_match, file_etag(raw)):
            raise VersionMismatch(
                "the config file changed since you read it (If-Match does not match its ETag); "
                "read it again and re-apply your change"
            )
        try:
            changed = change(raw)
        except NotRepresentable as error:
            raise InvalidChange(str(error)) from error
        except masking.ForeignMask as error:
            raise ConfigError([error.problem]) from error
        try:
            encoded = changed.text.encode("utf-8")
        except UnicodeEncodeError as error:
            raise InvalidChange(f"the body contains text that cannot be stored: {error}") from error
        if author.refuse is not None:
            before = changed.before[1] if changed.before else _parse_or_empty(_file_text(raw))
            problem = author.refuse(before, changed.data)
            if problem is not None:
                raise Forbidden(problem)
        if len(encoded) > MAX_FILE_BYTES:
            raise ConfigError(
                [
                    f"(file): the config would be {len(encoded)} bytes; the admin writes files of "
                    f"at most {MAX_FILE_BYTES} bytes (larger ones are edited by hand)"
                ]
            )
        config = load_config_data(changed.data, holder.path.parent)  # raises ConfigError
        revision = None
        if encoded != raw:
            parsed = dict([changed.before] if changed.before else []) | {changed.text: changed.data}
            revision = _replace_file(
                path, encoded, lambda: revisions.record(changed.text, author.name, parsed)
            )
        holder.apply(changed.text, config)
    return Written(etag=file_etag(encoded), data=changed.data, revision=revision)


def matches(if_match: str | None, etag: str) -> bool:
    """Whether an ``If-Match`` header (absent, ``*`` or a list of tags) matches ``etag``."""
    if if_match is None:
        return True
    tags = {tag.strip() for tag in if_match.split(",")}
    return "*" in tags or etag in tags


@contextlib.contextmanager
def _locked(path: Path) -> Iterator[None]:
    """The config's write lock, or ``Busy`` after waiting ``LOCK_WAIT`` seconds for it."""
    lock = revisions.file_lock(path, timeout=LOCK_WAIT)
    try:
        lock.acquire()
    except Timeout as error:
        raise Busy(
            f"another write has held the config file for over {LOCK_WAIT:g} s; retry shortly"
        ) from error
    try:
        yield
    finally:
        lock.release()


def _with_entry(written: Written, resource: Resource, key: str) -> Written:
    """``written`` with the entry ``key`` as reads show it."""
    entry = _masked(resource, resource.entries(written.data)[key])
    return replace(written, entry=entry, key=key)


def _replace_file(path: Path, data: bytes, record: Callable[[], ConfigRevision]) -> ConfigRevision:
    """Temp file in the same folder, fsync, then the revision, then the rename.

    The revision commits before the rename (and is deleted if the rename fails), so a
    ``kill -9`` at any moment leaves the file equal to a recorded revision; a temp file it
    leaves behind, and a revision recorded for a rename that never happened, are removed
    at the next start (``recover_interrupted_writes``).
    """
    mode = stat.S_IMODE(path.stat().st_mode) if path.exists() else 0o644
    descriptor, temporary = tempfile.mkstemp(
        dir=path.parent, prefix=_temp_prefix(path), suffix=_TEMP_SUFFIX
    )
    try:
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(temporary, mode)
        revision = record()
        try:
            os.replace(temporary, path)
        except BaseException:
            revision.delete()
            raise
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise
    directory = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(directory)
    finally:
        os.close(directory)
    return revision


_TEMP_SUFFIX = ".tmp"


def _temp_prefix(path: Path) -> str:
    return f".{path.name}."


@dataclass(frozen=True)
class Recovered:
    temp_files: list[Path]  # left beside the file by writers killed mid-write
    dropped_revision: int | None  # recorded by one of them for a rename that never happened


def recover_interrupted_writes(path: Path) -> Recovered:
    """Undo what writers killed mid-write left behind (under the write lock, so no live
    writer's work goes): their temp files, and the newest revision when it was recorded
    for a file that was never renamed into place (it differs from the file, and a temp
    file shows that a write was cut short)."""
    with _locked(path):
        stale = list(path.parent.glob(f"{glob.escape(_temp_prefix(path))}*{_TEMP_SUFFIX}"))
        for leftover in stale:
            with contextlib.suppress(FileNotFoundError):
                leftover.unlink()
        dropped = None
        if stale:
            newest = ConfigRevision.objects.order_by("-id").first()
            if newest is not None and newest.text != _text_or_none(path):
                dropped = newest.pk
                newest.delete()
    return Recovered(stale, dropped)


def _text_or_none(path: Path) -> str | None:
    try:
        return path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return None


def _document(text: str) -> Document:
    try:
        return Document(text)
    except ValueError as error:
        raise ConfigError([f"(file): {error}"]) from error
    except YAMLError as error:
        raise ConfigError([f"(file): not valid YAML: {describe_yaml_error(error)}"]) from error


def _file_text(raw: bytes) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(
            [
                f"(file): the config file on disk is not UTF-8 text (at byte {error.start}): "
                "fix or replace it with PUT /admin/config"
            ]
        ) from error


def _read_bytes(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return b""


def _parse_or_empty(text: str) -> Any:
    try:
        return parse(text) if text.strip() else {}
    except Exception:
        return {}


def _with_stored_secrets(text: str, stored: Any) -> tuple[str, Any]:
    """(``text`` as sent, except masked secrets sent back, which get their stored value;
    its data)."""
    sent = parse_yaml(text)
    restored = copy.deepcopy(sent)
    masking.keep_config_secrets(restored, stored)
    if restored == sent:
        return text, sent
    document = Document(text)
    masking.keep_config_secrets(document.root, stored, _restore_secret)
    return document.render()


def _restore_secret(mapping: CommentedMap, key: str, value: str) -> None:
    """The mask ``'********'`` is quoted only because a plain scalar cannot start with ``*``:
    the secret it stands for goes back in the style the dumper picks."""
    if mapping[key] == masking.HIDDEN:
        set_unstyled(mapping, key, value)
    else:
        mapping[key] = value


def _section_keys(root: dict[str, Any], section: str) -> set[str]:
    value = root.get(section)
    if isinstance(value, list):
        return {str(item.get("name")) for item in value if isinstance(item, dict)}
    if isinstance(value, dict):
        return {str(key) for key in value}
    return set()


def _ensure_section(root: Any, resource: Resource) -> None:
    value = root.get(resource.section)
    expected = list if resource.is_list else dict
    if value is None:
        if resource.section in root:
            del root[resource.section]
        append_entry(root, resource.section, expected())
    elif not isinstance(value, expected):
        raise ConfigError(
            [f"{resource.section}: must be a {'list' if resource.is_list else 'map'}"]
        )


def _locate(
    root: Any, resource: Resource, key: str, if_match: str | None
) -> tuple[Any, Any, dict[str, Any]]:
    """(the collection node, the entry's index or key, the entry) or NotFound."""
    container = root.get(resource.section)
    position: Any = None
    if resource.is_list and isinstance(container, list):
        position = next(
            (
                index
                for index, item in enumerate(container)
                if isinstance(item, dict) and item.get("name") == key
            ),
            None,
        )
    elif not resource.is_list and isinstance(container, dict) and key in container:
        position = key
    if position is None:
        raise EntryNotFound(f"{resource.singular} '{key}' does not exist")
    current = container[position]
    if not matches(if_match, entry_etag(_masked(resource, current))):
        raise VersionMismatch(
            f"{resource.singular} '{key}' changed since you read it (If-Match does not match); "
            "read it again and re-apply your change"
        )
    return container, position, current


def _masked(resource: Resource, item: dict[str, Any]) -> dict[str, Any]:
    """The entry as reads show it: its secrets (a provider's keys) masked."""
    shown: dict[str, Any] = json.loads(json.dumps(item, default=str))
    if not resource.is_list:  # the secrets' paths name map entries, any key
        masking.mask_config({resource.section: {"entry": shown}})
    return shown
