"""The live config: one immutable snapshot, swapped atomically on reload.

A request reads ``holder.config`` once at its start and keeps that reference to the
end, so a reload never changes a request half-way.
"""

import hashlib
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from agents.loader import ConfigError, load_config_text
from agents.schema import Config
from core.logformat import log_event

logger = logging.getLogger("gateway.config")


@dataclass(frozen=True)
class Snapshot:
    config: Config
    text: str

    @property
    def etag(self) -> str:
        return file_etag(self.text.encode())


def file_etag(data: bytes) -> str:
    return '"' + hashlib.sha256(data).hexdigest()[:32] + '"'


class ConfigHolder:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.snapshot: Snapshot | None = None
        self.problems: list[str] = []
        # Called with each newly applied snapshot; must return quickly (it runs under the lock).
        self.on_change: Callable[[Snapshot], None] | None = None
        self._lock = threading.Lock()

    @property
    def config(self) -> Config | None:
        snapshot = self.snapshot
        return snapshot.config if snapshot else None

    def reload(self, force: bool = False) -> bool:
        """Load the file if it changed; keep the last good snapshot when it is invalid.
        ``force``: load it even when its text did not change, for what it names on disk
        (the skills under skills.dir); a new snapshot only if that changed."""
        with self._lock:
            return self._reload(force)

    def _reload(self, force: bool) -> bool:
        try:
            text = self.path.read_text(encoding="utf-8")
        except OSError as error:
            return self._reject([f"(file): cannot read {self.path}: {error.strerror}"])
        except UnicodeDecodeError as error:
            return self._reject([f"(file): not UTF-8 text (byte {error.start}): {error.reason}"])
        live = self.snapshot
        # The live snapshot, when the file still holds its text.
        same = live if live is not None and live.text == text and not self.problems else None
        if same is not None and not force:
            return False
        try:
            config = load_config_text(text, self.path.parent)
        except ConfigError as error:
            return self._reject(error.problems)
        if same is not None and same.config.skill_catalog == config.skill_catalog:
            return False  # forced, and the skills did not change either
        self._install(text, config)
        return True

    def apply(self, text: str, config: Config) -> None:
        """Make ``config``, just validated from ``text`` by an admin write, the live one
        (without reading and parsing the file it wrote again)."""
        with self._lock:
            current = self.snapshot
            if current is None or current.text != text or self.problems:
                self._install(text, config)

    def _install(self, text: str, config: Config) -> None:
        self.snapshot = Snapshot(config=config, text=text)
        self.problems = []
        if self.on_change is not None:
            self.on_change(self.snapshot)
        log_event(logger, "config_loaded", path=str(self.path), agents=len(config.agents))
        for warning in config.warnings:
            log_event(
                logger,
                "config_warning",
                logging.WARNING,
                path=str(self.path),
                key=warning.path,
                warning=warning.message,
            )

    def _reject(self, problems: list[str]) -> bool:
        if problems != self.problems:
            kept = "the last valid config keeps serving" if self.snapshot else "nothing is served"
            log_event(
                logger,
                "config_rejected",
                logging.ERROR,
                path=str(self.path),
                problems=problems,
                consequence=kept,
            )
        self.problems = problems
        return False
