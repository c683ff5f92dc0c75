"""What a dialect's stream writer sends for some events, frame by frame."""

from inference.neutral.reply import ReplyFrames
from inference.neutral.types import StreamEvent


async def written(stream: ReplyFrames, *events: StreamEvent) -> list[bytes]:
    """The SSE frames ``stream`` writes when each event comes in a batch of its own, from
    the opening ones to those that end it."""
    sent = stream.opening() + b"".join(stream.frames([event]) for event in events)
    return sse_frames(sent + await stream.ended())


def sse_frames(sent: bytes) -> list[bytes]:
    """``sent`` cut into its frames, each with its blank line."""
    return [frame + b"\n\n" for frame in sent.split(b"\n\n") if frame]
