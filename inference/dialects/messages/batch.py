"""A request of a Message Batch: ``/v1/messages`` params read as a live request's, the
message as its result."""

from typing import Any

from agents.schema import Config
from core.requestlog import RequestLog
from inference.dialects.messages.body import MessagesIn
from inference.dialects.messages.errors import anthropic_error
from inference.dialects.messages.reader import from_messages
from inference.dialects.messages.reply import MessagesReply
from inference.engine import Engine
from inference.serving.batchline import BatchLines, LineCaller, answer_turn, parsed

PATH = "/v1/messages"


async def answer_line(
    body: dict[str, Any], caller: LineCaller, config: Config, engine: Engine, log: RequestLog
) -> dict[str, Any]:
    asked = parsed(MessagesIn, body, "model, messages and max_tokens")
    client = from_messages(asked, None, caller.user_id, None, max_tools=config.limits.max_tools)
    return await answer_turn(client, MessagesReply(), "msg_", caller, config, engine, log)


LINES = BatchLines(PATH, answer_line, anthropic_error, openai=False)
