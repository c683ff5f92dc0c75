"""A batch's line to ``/v1/responses``: the body read as a live request's, never stored
and never continuing a stored response (a batch's requests are stateless)."""

from typing import Any

from agents.schema import Config
from core.requestlog import RequestLog
from inference.dialects.responses.body import ResponsesIn
from inference.dialects.responses.reader import from_responses
from inference.dialects.responses.reply import ResponsesReply, echo
from inference.engine import Engine
from inference.neutral.errors import invalid_request
from inference.serving.batchline import BatchLines, LineCaller, answer_turn, parsed
from inference.serving.errors import openai_error


async def answer_line(
    body: dict[str, Any], caller: LineCaller, config: Config, engine: Engine, log: RequestLog
) -> dict[str, Any]:
    asked = parsed(ResponsesIn, body, "model and input")
    if asked.previous_response_id is not None:
        raise invalid_request(
            "previous_response_id: a batch's requests are stateless",
            param="previous_response_id",
        )
    read = from_responses(asked, None, caller.user_id, None, config.limits.max_tools)
    reply = ResponsesReply(echo(asked), read.namespaces, None)
    return await answer_turn(read.client, reply, "resp_", caller, config, engine, log)


LINES = BatchLines("/v1/responses", answer_line, openai_error)
