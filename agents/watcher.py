"""Reload the config when its file changes on disk.

Watches the directory, not the file: editors and our own writer replace the file with
``os.replace``, and a watch on the old inode would stop after the first replace.
"""

import logging
import os
import threading
from pathlib import Path

from watchfiles import watch

from agents.snapshot import ConfigHolder

logger = logging.getLogger("gateway.config")


class ConfigWatcher:
    def __init__(self, holder: ConfigHolder) -> None:
        self.holder = holder
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="config-watcher", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2)

    def _run(self) -> None:
        path: Path = self.holder.path
        polling = os.environ.get("GATEWAY_CONFIG_POLLING", "") == "1"
        changes = watch(
            path.parent,
            watch_filter=lambda _change, changed: Path(changed).name == path.name,
            debounce=100,
            step=20,
            stop_event=self._stop,
            force_polling=polling or None,
            poll_delay_ms=200,
            recursive=False,
            yield_on_timeout=False,
        )
        # A change between the first load and the watch's start would otherwise be missed.
        self._reload()
        for _ in changes:
            self._reload()

    def _reload(self) -> None:
        # The watcher must outlive any one bad edit, or later edits would never apply.
        try:
            self.holder.reload()
        except Exception:
            logger.exception("config reload of %s failed", self.holder.path)
