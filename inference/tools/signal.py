"""What wakes the process's task runner (``inference.automation``) when a task is queued:
owned by the engine, which is built before Django has loaded the models."""

import asyncio


class TaskSignal:
    """Set from the event loop by ``dispatch_task``."""

    def __init__(self) -> None:
        self.event = asyncio.Event()

    def queued(self) -> None:
        self.event.set()
