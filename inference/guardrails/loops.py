"""The loop guard: an agent calling the same tool with the same arguments again and
again, or going round a short cycle of calls, among a conversation's latest tool calls
(those in the history the request carries, whoever ran them, and the model's new ones)."""

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from inference.neutral.types import Message, ToolCall


@dataclass(frozen=True)
class Loop:
    call: str  # "name(canonical arguments)"
    times: int

    @property
    def described(self) -> str:
        call = self.call if len(self.call) <= 120 else self.call[:117] + "..."
        return f"{call} {self.times} times"


def signature(call: ToolCall) -> str:
    """A call as it is compared: its name and its arguments as canonical JSON."""
    try:
        arguments = json.dumps(
            json.loads(call.arguments or "{}"), sort_keys=True, separators=(",", ":")
        )
    except ValueError:
        arguments = call.arguments
    return f"{call.name}({arguments})"


def history_calls(messages: Iterable[Message]) -> list[ToolCall]:
    return [
        call for message in messages if message.role == "assistant" for call in message.tool_calls
    ]


def find_loop(
    calls: Sequence[ToolCall],
    max_repeats: int,
    window: int,
    among: Sequence[ToolCall] | None = None,
) -> Loop | None:
    """The call made ``max_repeats`` times among the last ``window`` calls, the latest
    such first; ``among``: only one of these calls (the model's new ones) counts. A cycle
    (a, b, a, b, a, b) is found this way too: each of its calls repeats as often as the
    cycle does."""
    recent = [signature(call) for call in calls[-window:]]
    candidates = recent if among is None else [signature(call) for call in among]
    for shown in dict.fromkeys(reversed(candidates)):
        times = recent.count(shown)
        if times >= max_repeats:
            return Loop(shown, times)
    return None
