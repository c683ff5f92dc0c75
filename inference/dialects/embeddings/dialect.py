"""The embeddings dialect's record."""

from inference.dialects.embeddings.batch import LINES
from inference.dialects.embeddings.routes import api
from inference.serving.dialect import Dialect
from inference.serving.errors import openai_error

DIALECT = Dialect("embeddings", ("/v1/embeddings",), api, openai_error, batch_lines=LINES)
