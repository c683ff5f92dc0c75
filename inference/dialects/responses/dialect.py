"""The Responses dialect's record."""

from inference.dialects.responses.batch import LINES
from inference.dialects.responses.routes import api
from inference.serving.dialect import Dialect
from inference.serving.errors import openai_error

DIALECT = Dialect("responses", ("/v1/responses",), api, openai_error, batch_lines=LINES)
