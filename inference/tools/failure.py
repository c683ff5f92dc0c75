"""A tool call of the agent's own that did not succeed."""


class ToolFailed(Exception):
    """The message is what the model is told instead of a result."""

    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message
