"""The Message Batches record: Anthropic's error shape and credentials (``x-api-key``),
under the Messages dialect's prefix (the longer prefix owns its paths); its requests are
not live traffic."""

from inference.dialects.message_batches.routes import api
from inference.dialects.messages.dialect import DIALECT as MESSAGES
from inference.dialects.messages.errors import anthropic_error
from inference.serving.dialect import Dialect

DIALECT = Dialect(
    "message_batches",
    ("/v1/messages/batches",),
    api,
    anthropic_error,
    MESSAGES.credentials,
    live=False,
)
