"""The chat dialect's record: everything under ``/v1`` that no other dialect claims
answers in OpenAI's error shape."""

from inference.dialects.chat.batch import LINES
from inference.dialects.chat.routes import api
from inference.serving.dialect import Dialect
from inference.serving.errors import openai_error

DIALECT = Dialect("chat", ("/v1",), api, openai_error, batch_lines=LINES)
