"""A batch's line to ``/v1/chat/completions``: the body read as a live request's, the
completion as its response."""

from typing import Any

from agents.schema import Config
from core.requestlog import RequestLog
from inference.dialects.chat.body import ChatCompletionIn
from inference.dialects.chat.reader import from_chat_completion
from inference.dialects.chat.reply import ChatCompletionReply
from inference.engine import Engine
from inference.serving.batchline import BatchLines, LineCaller, answer_turn, parsed
from inference.serving.errors import openai_error


async def answer_line(
    body: dict[str, Any], caller: LineCaller, config: Config, engine: Engine, log: RequestLog
) -> dict[str, Any]:
    asked = parsed(ChatCompletionIn, body, "model and messages")
    client = from_chat_completion(
        asked, bound_user=caller.user_id, max_tools=config.limits.max_tools
    )
    return await answer_turn(
        client, ChatCompletionReply(), "chatcmpl-", caller, config, engine, log
    )


LINES = BatchLines("/v1/chat/completions", answer_line, openai_error)
