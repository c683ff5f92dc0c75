"""The two tools of an agent with ``tasks: true`` (docs/automation.md): ``dispatch_task``
queues a turn of another agent for the same user and answers its id at once;
``task_status`` says how it is doing, and its result once done.

A task is a row (``AgentTask``) the process's task runner (``inference.automation``)
takes up; dispatching wakes it. A task belongs to the user who dispatched it: another
user's id is as unknown as an id that never existed.
"""

import asyncio
import json
import uuid
from typing import Any

from agents.schema import Config
from inference.database import in_database
from inference.neutral.types import ToolSpec
from inference.tools.failure import ToolFailed

DISPATCH_TASK = "dispatch_task"
TASK_STATUS = "task_status"
TASK_TOOLS = (DISPATCH_TASK, TASK_STATUS)


class TaskSignal:
    """Wakes the process's task runner when a task is queued (set from the event loop)."""

    def __init__(self) -> None:
        self.event = asyncio.Event()

    def queued(self) -> None:
        self.event.set()


def task_specs(config: Config) -> tuple[ToolSpec, ...]:
    agents = [agent.name for agent in config.agents]
    return (
        ToolSpec(
            DISPATCH_TASK,
            "Start a task in the background: another agent answers the message on its own, "
            "for the same user. Answers {task_id} at once; ask task_status for the result.",
            {
                "type": "object",
                "properties": {
                    "agent": {"type": "string", "enum": agents, "description": "Who does it."},
                    "message": {"type": "string", "description": "What to do."},
                },
                "required": ["agent", "message"],
            },
        ),
        ToolSpec(
            TASK_STATUS,
            "How a dispatched task is doing: {status: queued|running|done|failed, result?}.",
            {
                "type": "object",
                "properties": {"task_id": {"type": "string"}},
                "required": ["task_id"],
            },
        ),
    )


async def run_task_tool(
    tool: str,
    arguments: dict[str, Any],
    config: Config,
    user_id: str,
    dispatcher: str,
    signal: TaskSignal,
) -> str:
    if tool == DISPATCH_TASK:
        agent, message = arguments.get("agent"), arguments.get("message")
        if not isinstance(agent, str) or not isinstance(message, str) or not message.strip():
            raise ToolFailed(f'{DISPATCH_TASK} takes {{"agent": "<name>", "message": "<what>"}}')
        if config.agent(agent) is None:
            raise ToolFailed(f"there is no agent {agent!r}")
        queued = await in_database(queue_task, user_id, agent, message, dispatcher)
        signal.queued()
        return json.dumps({"task_id": queued})
    asked = arguments.get("task_id")
    if not isinstance(asked, str):
        raise ToolFailed(f'{TASK_STATUS} takes {{"task_id": "<id>"}}')
    status = await in_database(task_status, user_id, asked)
    if status is None:
        raise ToolFailed(f"there is no task {asked!r}")
    return json.dumps(status)


def queue_task(user_id: str, agent: str, message: str, dispatcher: str) -> str:
    # Imported here: the engine imports this module before Django has loaded the models.
    from inference.models import AgentTask

    task = AgentTask.objects.create(
        id=f"task-{uuid.uuid4().hex}",
        user_id=user_id,
        agent=agent,
        message=message,
        dispatched_by=dispatcher,
    )
    return task.id


def task_status(user_id: str, task_id: str) -> dict[str, str] | None:
    """The task's status (and result or error once it has one); None when ``user_id``
    has no such task."""
    from inference.models import AgentTask

    task = AgentTask.objects.filter(id=task_id, user_id=user_id).first()
    if task is None:
        return None
    status = {"status": task.status}
    if task.status == "done":
        status["result"] = task.result
    elif task.status == "failed":
        status["error"] = task.error
    return status
