"""The dialects the gateway speaks, in one place: the middleware, the credential gate and
the error mapping ask it which dialect a path belongs to, and the root URLconf mounts
their routes. Order is the URL resolver's: Gemini's ``/v1/models/{model}:method`` before
chat's ``/v1/models/{id}``, then the busiest first."""

from django.urls import URLPattern, URLResolver, path

from inference.dialects.batches.dialect import DIALECT as BATCHES
from inference.dialects.chat.dialect import DIALECT as CHAT
from inference.dialects.embeddings.dialect import DIALECT as EMBEDDINGS
from inference.dialects.files.dialect import DIALECT as FILES
from inference.dialects.gemini.dialect import DIALECT as GEMINI
from inference.dialects.mcp.dialect import DIALECT as MCP
from inference.dialects.messages.dialect import DIALECT as MESSAGES
from inference.dialects.responses.dialect import DIALECT as RESPONSES
from inference.serving.batchline import BatchLines
from inference.serving.dialect import Dialect

DIALECTS: tuple[Dialect, ...] = (
    GEMINI,
    CHAT,
    MESSAGES,
    RESPONSES,
    EMBEDDINGS,
    FILES,
    BATCHES,
    MCP,
)


def dialect_of(path: str) -> Dialect | None:
    """The dialect whose path ``path`` is: the one with the longest prefix that owns it
    (None: the path is not the API's)."""
    found, longest = None, -1
    for dialect in DIALECTS:
        claim = dialect.claim(path)
        if claim > longest:
            found, longest = dialect, claim
    return found


def batch_lines(path: str) -> BatchLines | None:
    """What answers a batch's line to ``path`` (None: no dialect batches it)."""
    for dialect in DIALECTS:
        lines = dialect.batch_lines
        if lines is not None and lines.path == path:
            return lines
    return None


def openai_batch_lines() -> dict[str, BatchLines]:
    """What answers the lines ``/v1/batches`` runs, by the path they are requests to."""
    return {
        dialect.batch_lines.path: dialect.batch_lines
        for dialect in DIALECTS
        if dialect.batch_lines is not None and dialect.batch_lines.openai
    }


def without_secrets(uri: str) -> str:
    """A request's path and query without the credentials its dialect reads from the
    query (what may be logged of it)."""
    path, mark, query = uri.partition("?")
    dialect = dialect_of(path)
    if dialect is None or not mark:
        return uri
    kept = dialect.without_secrets(query)
    return f"{path}?{kept}" if kept else path


urlpatterns: list[URLPattern | URLResolver] = [path("", dialect.api.urls) for dialect in DIALECTS]
