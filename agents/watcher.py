"""Reload the config when its file changes on disk, or anything under its skills.dir.

Watches the config's directory, not the file: editors and our own writer replace the
file with ``os.replace``, and a watch on the old inode would stop after the first
replace.

The skills are watched in a thread of their own: their folder recursively (a skill is a
folder of files), the config's folder not (it may be a whole checkout). A change there
reloads the config although its text did not change. The folder is the live config's
``skills.dir``: when a reload moves it, the watch moves with it.
"""

import logging
import os
import threading
from pathlib import Path

from watchfiles import watch

from agents.snapshot import ConfigHolder

logger = logging.getLogger("gateway.config")

# How often, in milliseconds, the skills watch checks that skills.dir has not moved.
SKILLS_RECHECK_MS = 500


class ConfigWatcher:
    def __init__(self, holder: ConfigHolder) -> None:
        self.holder = holder
        self._stop = threading.Event()
        self._polling = os.environ.get("GATEWAY_CONFIG_POLLING", "") == "1"
        self._threads = (
            threading.Thread(target=self._watch_file, name="config-watcher", daemon=True),
            threading.Thread(target=self._watch_skills, name="skills-watcher", daemon=True),
        )

    def start(self) -> None:
        for thread in self._threads:
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        for thread in self._threads:
            thread.join(timeout=2)

    def _watch_file(self) -> None:
        path: Path = self.holder.path
        changes = watch(
            path.parent,
            watch_filter=lambda _change, changed: Path(changed).name == path.name,
            debounce=100,
            step=20,
            stop_event=self._stop,
            force_polling=self._polling or None,
            poll_delay_ms=200,
            recursive=False,
            yield_on_timeout=False,
        )
        # A change between the first load and the watch's start would otherwise be missed.
        self._reload()
        for _ in changes:
            self._reload()

    def _watch_skills(self) -> None:
        while not self._stop.is_set():
            folder = self._skills_folder()
            if folder is None:
                self._stop.wait(SKILLS_RECHECK_MS / 1000)
                continue
            try:
                self._follow(folder)
            except Exception:  # the folder went away under the watch, say
                logger.exception("watching the skills under %s failed", folder)
                self._stop.wait(SKILLS_RECHECK_MS / 1000)

    def _follow(self, folder: Path) -> None:
        """Reload on every change under ``folder`` until skills.dir is another folder."""
        changes = watch(
            folder,
            debounce=100,
            step=20,
            stop_event=self._stop,
            rust_timeout=SKILLS_RECHECK_MS,
            yield_on_timeout=True,
            force_polling=self._polling or None,
            poll_delay_ms=200,
            recursive=True,
        )
        started = False
        for changed in changes:
            # Once at the start too: a change before the watch began would be missed.
            if changed or not started:
                self._reload(force=True)
                started = True
            if self._skills_folder() != folder:
                return

    def _skills_folder(self) -> Path | None:
        """The live config's skills.dir, while it is a folder."""
        config = self.holder.config
        if config is None or config.skills is None:
            return None
        folder = config.folder(config.skills.dir).resolve()
        return folder if folder.is_dir() else None

    def _reload(self, force: bool = False) -> None:
        # The watcher must outlive any one bad edit, or later edits would never apply.
        try:
            self.holder.reload(force)
        except Exception:
            logger.exception("config reload of %s failed", self.holder.path)
