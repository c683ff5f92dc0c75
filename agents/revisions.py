"""Record every applied version of the config as a ``ConfigRevision``.

Admin writes record their revision themselves, under the file lock, together with the
write. Hand edits are recorded by ``RevisionRecorder``, a thread woken by every reload:
under the same lock it compares the file with the newest revision, so it never mistakes
an admin write (of this process or another) for a hand edit.
"""

import difflib
import logging
import re
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

from django.db import DatabaseError, close_old_connections, connection
from filelock import FileLock, Timeout

from agents import masking
from agents.snapshot import ConfigHolder, Snapshot, file_etag
from agents.yamldoc import Document, parse

if TYPE_CHECKING:
    from agents.models import ConfigRevision

# The models are imported where they are used: the runtime (and so this module) is
# imported by gateway.asgi before Django has loaded its apps.

logger = logging.getLogger("gateway.config")

FILE_EDIT = "file edit"


def file_lock(path: Path, timeout: float = 10) -> FileLock:
    """The exclusive lock every writer of ``path`` holds (several processes may serve it)."""
    return FileLock(path.with_name(path.name + ".lock"), timeout=timeout)


def record(text: str, author: str, parsed: dict[str, Any] | None = None) -> "ConfigRevision":
    """Record ``text`` as the newest revision; ``parsed`` maps texts already parsed to
    their data, so the diff need not parse them again."""
    from agents.models import ConfigRevision

    latest = ConfigRevision.objects.order_by("-id").first()
    return ConfigRevision.objects.create(
        author=author[:255],
        text=text,
        diff=masked_diff(latest.text if latest else "", text, parsed),
        etag=file_etag(text.encode()),
    )


# Secrets the quick diff can mask: characters no YAML style escapes or folds, so each
# occurrence in the text is the value itself.
_PLAIN_SECRET = re.compile(r"[A-Za-z0-9._~+/=:@%-]{6,}")


def masked_diff(before: str, after: str, parsed: dict[str, Any] | None = None) -> str:
    """Unified diff of two versions of the file, secrets masked.

    Quick way (no YAML parsing beyond ``parsed``): diff the texts, then replace every
    secret of either version by its mask, when each secret is written as itself. Else
    diff the two versions masked through their round-trip documents.
    """
    hidden = _plain_secrets(before, after, parsed or {})
    if hidden is None:
        return _unified(masked_text(before), masked_text(after))
    return masking.redact(_unified(before, after), hidden)


def _plain_secrets(before: str, after: str, parsed: dict[str, Any]) -> dict[str, str] | None:
    """Every secret of both texts and its mask, or None if one is not written as itself."""
    hidden: dict[str, str] = {}
    for text in (before, after):
        if not text.strip():
            continue
        data = parsed[text] if text in parsed else _data(text)
        if not isinstance(data, dict):
            return None
        secrets = masking.secrets(data)
        if not all(_PLAIN_SECRET.fullmatch(value) and value in text for value in secrets):
            return None
        hidden |= secrets
    return hidden


def _data(text: str) -> Any:
    try:
        return parse(text)
    except Exception:
        return None


def _unified(before: str, after: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True),
        after.splitlines(keepends=True),
        fromfile="before",
        tofile="after",
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def masked_text(text: str) -> str:
    """The file with its secrets masked, comments and layout kept."""
    if not text.strip():
        return text
    try:
        document = Document(text)
    except Exception:
        return "(not valid YAML: not shown)\n"
    masking.mask_config(document.root)
    return document.text()


def record_file_edit(holder: ConfigHolder) -> None:
    """Record the live file as a hand edit unless it is the newest revision already."""
    from agents.models import ConfigRevision

    with file_lock(holder.path):
        snapshot = holder.snapshot
        try:
            text = holder.path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            return  # not what was applied: the reload reports it
        if snapshot is None or snapshot.text != text:
            return  # not applied (invalid), or a newer change is about to be reloaded
        latest = ConfigRevision.objects.order_by("-id").only("text").first()
        if latest is None or latest.text != text:
            record(text, FILE_EDIT)


class RevisionRecorder:
    """Background thread that records hand edits after reloads (never on a request's path)."""

    def __init__(self, holder: ConfigHolder) -> None:
        self.holder = holder
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="revision-recorder", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def notify(self, snapshot: Snapshot) -> None:
        self._wake.set()

    def stop(self) -> None:
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout=2)

    def _run(self) -> None:
        while True:
            self._wake.wait()
            if self._stop.is_set():
                return
            self._wake.clear()
            close_old_connections()
            try:
                record_file_edit(self.holder)
            except (DatabaseError, Timeout) as error:
                logger.warning("could not record the config revision: %s", error)
            finally:
                connection.close()
