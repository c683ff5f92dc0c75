"""The long-lived parts of one server process, owned in one place.

``gateway.asgi`` starts the runtime when the process starts; request code only borrows
from it through ``current()``.
"""

from django.conf import settings

from agents.revisions import RevisionRecorder
from agents.snapshot import ConfigHolder
from agents.watcher import ConfigWatcher
from inference.providers.registry import ProviderClients


class Runtime:
    def __init__(self, holder: ConfigHolder) -> None:
        self.holder = holder
        self.watcher = ConfigWatcher(holder)
        self.recorder = RevisionRecorder(holder)
        holder.on_change = self.recorder.notify
        self.providers = ProviderClients()

    def start(self) -> None:
        self.recorder.start()
        self.holder.reload()
        self.watcher.start()

    async def stop(self) -> None:
        self.watcher.stop()
        self.recorder.stop()
        await self.providers.aclose()


_runtime: Runtime | None = None


def current() -> Runtime:
    """The process's runtime, started on first use (ASGI entry point, tests, commands)."""
    global _runtime
    if _runtime is None:
        _runtime = Runtime(ConfigHolder(settings.GATEWAY_CONFIG))
        _runtime.start()
    return _runtime
