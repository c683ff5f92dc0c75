"""Who the request is for: an API key's user (a request that names another user is
refused), else the authenticated principal when ``auth.proxy.bind_user`` is on (nothing
the client sends can override it), else ``safety_identifier``, else ``user``, else the
``X-User-Id`` header, else the config's ``default_user_id``."""

from dataclasses import dataclass
from typing import Protocol

from agents.schema import Config
from inference.errors import ApiError, invalid_request
from inference.ledger.keys import KeyGrant
from inference.wire.wellformed import has_lone_surrogate

MAX_USER_ID_LENGTH = 255  # the width of the user_id columns


class NamesUser(Protocol):
    """Where a request may name its user (a ``ClientRequest`` is one)."""

    @property
    def safety_identifier(self) -> str | None: ...
    @property
    def user(self) -> str | None: ...
    @property
    def header_user(self) -> str | None: ...
    @property
    def bound_user(self) -> str | None: ...


@dataclass(frozen=True)
class Claims:
    """The user a request names, before its body is read whole (or without a body)."""

    safety_identifier: str | None = None
    user: str | None = None
    header_user: str | None = None
    bound_user: str | None = None


def resolve_user_id(client: NamesUser, config: Config, key: KeyGrant | None = None) -> str:
    if key is not None:
        for field, named in (
            ("safety_identifier", client.safety_identifier),
            ("user", client.user),
            ("X-User-Id", client.header_user),
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
        ("the authenticated principal", client.bound_user),
        ("safety_identifier", client.safety_identifier),
        ("user", client.user),
        ("X-User-Id", client.header_user),
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
