"""The Batch API's record: OpenAI's error shape and credentials; its requests are not
live traffic (batch lines do not give way to polls of batches)."""

from inference.dialects.batches.routes import api
from inference.serving.dialect import Dialect
from inference.serving.errors import openai_error

DIALECT = Dialect("batches", ("/v1/batches",), api, openai_error, background=("/v1/batches",))
