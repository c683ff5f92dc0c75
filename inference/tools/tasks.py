"""The two tools of an agent with ``tasks: true`` (docs/automation.md): ``dispatch_task``
queues a turn of another agent for the same caller and answers its id at once;
``task_status`` says how it is doing, and its result once done.

A task is a row (``AgentTask``) the process's task runner (``inference.automation``)
takes up; dispatching wakes it. A task is stored with its caller (user, API key, depth)
and runs as that caller: the key may dispatch only agents it may use, a turn at most
``limits.max_tasks_per_turn`` tasks, and tasks nest at most ``limits.max_task_depth``
deep. A task belongs to the user who dispatched it: another user's id, or one of an
agent the key may not use, is as unknown as an id that never existed.
"""

import json
import uuid
from typing import Any

from agents.schema import Config
from inference.database import in_database
from inference.models import AgentTask
from inference.money.caller import Caller
from inference.neutral.types import ToolSpec
from inference.tools.failure import ToolFailed
from inference.tools.signal import TaskSignal

DISPATCH_TASK = "dispatch_task"
TASK_STATUS = "task_status"
TASK_TOOLS = (DISPATCH_TASK, TASK_STATUS)


class Dispatches:
    """The tasks one turn dispatched so far, all of its levels together."""

    def __init__(self) -> None:
        self.count = 0

    def take(self, limit: int) -> bool:
        """One more, if the turn is still under ``limit`` (counted as the calls come)."""
        if self.count >= limit:
            return False
        self.count += 1
        return True


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
    caller: Caller,
    dispatcher: str,
    signal: TaskSignal,
    dispatches: Dispatches,
) -> str:
    if tool == DISPATCH_TASK:
        agent = _dispatchable(arguments, config, caller, dispatches)
        queued = await in_database(queue_task, caller, agent, arguments["message"], dispatcher)
        signal.queued()
        return json.dumps({"task_id": queued})
    asked = arguments.get("task_id")
    if not isinstance(asked, str):
        raise ToolFailed(f'{TASK_STATUS} takes {{"task_id": "<id>"}}')
    status = await in_database(task_status, caller, asked)
    if status is None:
        raise ToolFailed(f"there is no task {asked!r}")
    return json.dumps(status)


def _dispatchable(
    arguments: dict[str, Any], config: Config, caller: Caller, dispatches: Dispatches
) -> str:
    """The agent a dispatch names, when the caller may dispatch it a task now."""
    agent, message = arguments.get("agent"), arguments.get("message")
    if not isinstance(agent, str) or not isinstance(message, str) or not message.strip():
        raise ToolFailed(f'{DISPATCH_TASK} takes {{"agent": "<name>", "message": "<what>"}}')
    if config.agent(agent) is None:
        raise ToolFailed(f"there is no agent {agent!r}")
    key, limits = caller.key, config.limits
    if key is not None and not key.allows(agent):
        raise ToolFailed(
            f"the API key may not use agent {agent!r} (it may use: {', '.join(key.agents or ())})"
        )
    if caller.task_depth >= limits.max_task_depth:
        raise ToolFailed(
            f"a task {caller.task_depth} levels down may not dispatch tasks "
            f"(limits.max_task_depth is {limits.max_task_depth})"
        )
    if not dispatches.take(limits.max_tasks_per_turn):
        raise ToolFailed(
            f"the turn dispatched {dispatches.count} tasks already "
            f"(limits.max_tasks_per_turn is {limits.max_tasks_per_turn})"
        )
    return agent


def queue_task(caller: Caller, agent: str, message: str, dispatcher: str) -> str:
    task = AgentTask.objects.create(
        id=f"task-{uuid.uuid4().hex}",
        user_id=caller.user_id,
        api_key_id=caller.key_id,
        depth=caller.task_depth + 1,
        agent=agent,
        message=message,
        dispatched_by=dispatcher,
    )
    return task.id


def task_status(caller: Caller, task_id: str) -> dict[str, str] | None:
    """The task's status (and result or error once it has one); None when the caller's
    user has no such task, or it is of an agent the caller's key may not use."""
    task = AgentTask.objects.filter(id=task_id, user_id=caller.user_id).first()
    if task is None or (caller.key is not None and not caller.key.allows(task.agent)):
        return None
    status = {"status": task.status}
    if task.status == "done":
        status["result"] = task.result
    elif task.status == "failed":
        status["error"] = task.error
    return status
