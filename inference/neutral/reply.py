"""What a dialect needs to write an answer, and what it must offer the one serve function
(``inference.serving.serve``) that drives every dialect's response, streamed or not."""

from dataclasses import dataclass
from typing import Any, Protocol

from inference.neutral.errors import ApiError
from inference.neutral.types import ChatResponse, StreamEvent


@dataclass(frozen=True)
class ReplyHeader:
    """What every reply repeats of its turn, and nothing else of it."""

    id: str
    created: int
    model: str  # the name the client asked for, not the upstream model
    include_usage: bool = False  # chat streams: the usage chunk was asked for


class ReplyFrames(Protocol):
    """One streamed reply, written as its events arrive: the frames that open it, those
    of each batch of events (nothing for some), those that end it once its events ended
    (the turn's ``Finish`` and total ``UsageReport`` were the last), the frame that ends
    it when the turn fails after the first frame went out, and its media type."""

    content_type: str

    def opening(self) -> bytes: ...

    def frames(self, events: list[StreamEvent]) -> bytes: ...

    async def ended(self) -> bytes: ...

    def failed(self, error: ApiError) -> bytes: ...


class ReplyFormat(Protocol):
    """One dialect's shapes of an answer."""

    def body(self, header: ReplyHeader, answer: ChatResponse) -> dict[str, Any]: ...

    async def finished(self, body: dict[str, Any]) -> None:
        """What the dialect does with a whole body before it is sent (a stream's frames
        do it themselves): nothing, unless it says otherwise."""
        return None

    def stream(self, header: ReplyHeader) -> ReplyFrames: ...
