"""Who the request is for: an API key's user (a request that names another user is
refused), else the authenticated principal when ``auth.proxy.bind_user`` is on (nothing
the client sends can override it), else ``safety_identifier``, else ``user``, else the
``X-User-Id`` header, else a user the client labels on its own (``metadata.user_id`` of
``/v1/messages``, which Claude Code fills by itself), else the config's
``default_user_id``."""

from agents.schema import Config
from inference.money.keys import KeyGrant
from inference.neutral.errors import ApiError, invalid_request
from inference.neutral.request import Claims
from inference.neutral.wellformed import has_lone_surrogate

MAX_USER_ID_LENGTH = 255  # the width of the user_id columns


def resolve_user_id(claims: Claims, config: Config, key: KeyGrant | None = None) -> str:
    if key is not None:
        for field, named in (
            ("safety_identifier", claims.safety_identifier),
            ("user", claims.user),
            ("X-User-Id", claims.header_user),
        ):
            if named is not None and named.strip() and named != key.user:
                raise ApiError(
                    403,
                    f"{field} names another user than the API key's: a key acts for its own "
                    "user only",
                    code="permission_denied",
                    param=field,
                )
        return key.user
    for field, candidate in (
        ("the authenticated principal", claims.bound_user),
        ("safety_identifier", claims.safety_identifier),
        ("user", claims.user),
        ("X-User-Id", claims.header_user),
        ("metadata.user_id", claims.client_label),
        ("default_user_id", config.default_user_id),
    ):
        if candidate is not None and candidate.strip():
            if (
                len(candidate) > MAX_USER_ID_LENGTH
                or "\x00" in candidate
                or has_lone_surrogate(candidate)
            ):
                raise invalid_request(
                    f"{field} must be at most {MAX_USER_ID_LENGTH} characters of valid Unicode "
                    "text, without NUL",
                    param=field,
                    code="invalid_user",
                )
            return candidate
    raise invalid_request(
        "safety_identifier is required: send a stable id of the end user "
        "(or configure default_user_id)",
        param="safety_identifier",
        code="missing_user",
    )
