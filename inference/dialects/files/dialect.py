"""The Files API's record: OpenAI's error shape and credentials; its bodies are uploads
(limited by ``files.max_file_mb``, not ``limits.max_body_mb``)."""

from inference.dialects.files.routes import api
from inference.serving.dialect import Dialect
from inference.serving.errors import openai_error

DIALECT = Dialect(
    "files", ("/v1/files",), api, openai_error, uploads=True, background=("/v1/files",)
)
