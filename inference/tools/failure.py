"""A tool call of the agent's own that did not succeed."""

from inference.neutral.types import Usage


class ToolFailed(Exception):
    """The message is what the model is told instead of a result; ``usage`` is what the
    tool spent (a subagent's calls)."""

    def __init__(self, message: str, usage: Usage | None = None) -> None:
        super().__init__(message)
        self.usage = usage or Usage()
