"""Who the request is for: ``safety_identifier``, else ``user``, else ``default_user_id``."""

from agents.schema import Config
from inference.errors import invalid_request
from inference.schemas import ChatCompletionIn


def resolve_user_id(body: ChatCompletionIn, config: Config) -> str:
    for candidate in (body.safety_identifier, body.user, config.default_user_id):
        if candidate is not None and candidate.strip():
            return candidate
    raise invalid_request(
        "safety_identifier is required: send a stable id of the end user "
        "(or configure default_user_id)",
        param="safety_identifier",
        code="missing_user",
    )
