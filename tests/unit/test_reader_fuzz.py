"""Every dialect's reader fed generated bodies (``tests.fuzzing``: valid bodies changed at
one to three places): each body is read into a request or refused with a 400 naming the
field, nothing else (a ``TypeError`` would reach the client as a 500), and none hangs
(the suite's timeout). A reader here is what a route runs before the turn: the body
model (its errors as the route words them), the dialect's reader, the checks of the tool
schemas and of the metadata options."""

import copy
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from pydantic import BaseModel, ValidationError

from inference.dialects.chat.body import ChatCompletionIn
from inference.dialects.chat.reader import from_chat_completion
from inference.dialects.embeddings.wire import EmbeddingsIn, read_inputs
from inference.dialects.gemini import body as gemini_body
from inference.dialects.gemini import reader as gemini
from inference.dialects.messages import body as messages_body
from inference.dialects.messages import reader as messages
from inference.dialects.responses.body import ResponsesIn
from inference.dialects.responses.reader import from_responses
from inference.neutral.errors import ApiError
from inference.neutral.readers import check_tool_schemas
from inference.neutral.request import Claims, ClientRequest
from inference.serving.body_errors import body_error
from inference.turn.options import parse_options
from tests.fuzzing import SEEDS, mutated

FUZZED = settings(
    max_examples=300,
    deadline=None,  # no wall clock: a hang is the suite's timeout
    database=None,
    suppress_health_check=[HealthCheck.too_slow],
)


def parsed[M: BaseModel](model: type[M], body: Any) -> M:
    """``body`` as the route's model, or the 400 the route answers."""
    try:
        return model.model_validate(body)
    except ValidationError as error:
        raise body_error(error.errors(), "the required fields") from None


def checked(client: ClientRequest) -> None:
    """What the turn checks of a read request before anything else."""
    check_tool_schemas(client.tools)
    parse_options(client.metadata)


def gemini_embeddings(body: Any) -> None:
    if isinstance(body, dict) and "requests" in body:
        batch = parsed(gemini_body.BatchEmbedIn, body)
        for index, one in enumerate(batch.requests):
            gemini.content_text(one.content, f"requests[{index}].content")
    else:
        gemini.content_text(parsed(gemini_body.EmbedContentIn, body).content, "content")


READERS: dict[str, Callable[[Any], object]] = {
    "chat": lambda body: checked(from_chat_completion(parsed(ChatCompletionIn, body))),
    "responses": lambda body: checked(from_responses(parsed(ResponsesIn, body)).client),
    "messages": lambda body: checked(
        messages.from_messages(parsed(messages_body.MessagesIn, body))
    ),
    "messages_count": lambda body: checked(
        messages.from_count_tokens(parsed(messages_body.CountTokensIn, body))
    ),
    "embeddings": lambda body: read_inputs(parsed(EmbeddingsIn, body)),
    "gemini": lambda body: checked(
        gemini.from_generate_content(
            parsed(gemini_body.GenerateContentIn, body), "agent", Claims(), False
        )
    ),
    "gemini_count": lambda body: checked(
        gemini.from_count_tokens(parsed(gemini_body.CountTokensIn, body), "agent")
    ),
    "gemini_embed": gemini_embeddings,
}


def read_or_refused(dialect: str, body: Any) -> None:
    try:
        READERS[dialect](body)
    except ApiError as error:
        assert error.status == 400, (error.status, error.message)
        # Only a body that is not an object at all has no field to name.
        assert error.param is not None or not isinstance(body, dict), error.message


@pytest.mark.parametrize("dialect", sorted(SEEDS))
def test_reader_reads_or_refuses_every_generated_body(dialect: str) -> None:
    @FUZZED
    @given(body=mutated(dialect))
    def check(body: Any) -> None:
        read_or_refused(dialect, body)

    check()


@pytest.mark.parametrize(
    ("dialect", "body"),
    [(dialect, body) for dialect, bodies in sorted(SEEDS.items()) for body in bodies],
)
def test_reader_reads_every_seed(dialect: str, body: dict[str, Any]) -> None:
    """The generated bodies start from bodies the readers take whole."""
    READERS[dialect](copy.deepcopy(body))
