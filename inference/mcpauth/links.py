"""The browser's round trip of a sign-in: the connect link a tool call answers (no browser
is at hand then), and the redirect URI the authorization server sends the browser back to.

A connect link carries its user and server, signed with the secret key (Django's
signing) and good for ``LINK_LIFETIME`` seconds: whoever opens it connects an account to
that user, so it is given to that user only, in their own conversation.
"""

import time
from dataclasses import dataclass
from urllib.parse import urlencode

from django.core import signing
from django.urls import reverse

from inference.mcpauth.failures import InvalidLink

LINK_LIFETIME = 600  # seconds
CONNECT_SALT = "gateway.mcp.connect"


@dataclass(frozen=True)
class Invitation:
    """Whom a connect link is for, and when it was given (seconds since the epoch)."""

    user_id: str
    issued: float


def connect_link(public_base_url: str, server: str, user_id: str) -> str:
    state = signing.dumps({"u": user_id, "s": server, "t": time.time()}, salt=CONNECT_SALT)
    path = reverse("mcp_connect", args=[server])
    return f"{public_base_url.rstrip('/')}{path}?{urlencode({'state': state})}"


def redirect_uri(public_base_url: str, server: str) -> str:
    return f"{public_base_url.rstrip('/')}{reverse('mcp_callback', args=[server])}"


def read_connect_link(state: str, server: str) -> Invitation:
    try:
        value = signing.loads(state, salt=CONNECT_SALT, max_age=LINK_LIFETIME)
    except signing.SignatureExpired as error:
        raise InvalidLink(
            f"This link has expired: links are valid for {LINK_LIFETIME // 60} minutes. "
            "Ask the assistant again for a new one."
        ) from error
    except signing.BadSignature as error:
        raise InvalidLink(
            "This link is not valid (it was changed or cut short). Ask the assistant again "
            "for a new one."
        ) from error
    if not isinstance(value, dict) or value.get("s") != server:
        raise InvalidLink(f"This link is not for the MCP server '{server}'.")
    return Invitation(str(value["u"]), float(value["t"]))
