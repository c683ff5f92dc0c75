"""A user's tokens for an MCP server, as their connection keeps them: sealed in the row
(``inference.mcpauth.sealing``), opened only to be used. Units of work for the database
threads (``inference.database``)."""

from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db import transaction
from mcp.shared.auth import OAuthToken

from inference.erasures import erasures_of
from inference.mcpauth.sealing import seal, unseal
from inference.models import McpConnection

# An access token this close to its expiry is refreshed before it is used: the call
# that takes it must not find it expired on arrival.
EXPIRY_MARGIN = timedelta(seconds=30)


@dataclass(frozen=True)
class Grant:
    """What the user's connection holds: who issued the tokens to which client, and them."""

    id: int
    issuer: str
    client_id: str
    access_token: str = field(repr=False)
    refresh_token: str | None = field(repr=False)
    expires_at: datetime | None
    sealed: str = field(repr=False)  # the row's sealed tokens as read (a version)

    def expired(self, now: datetime) -> bool:
        return self.expires_at is not None and now >= self.expires_at - EXPIRY_MARGIN


def grant_of(user_id: str, server: str) -> Grant | None:
    """The user's grant for the server (None: not connected, or sealed under another
    secret key, which is as good as not connected)."""
    row = McpConnection.objects.filter(user_id=user_id, server=server).first()
    if row is None:
        return None
    tokens = unseal("tokens", row.tokens)
    if tokens is None:
        return None
    return Grant(
        id=row.id,
        issuer=row.issuer,
        client_id=row.client_id,
        access_token=tokens["access_token"],
        refresh_token=tokens.get("refresh_token"),
        expires_at=row.expires_at,
        sealed=row.tokens,
    )


def keep_grant(
    user_id: str,
    server: str,
    issuer: str,
    client_id: str,
    token: OAuthToken,
    asked: str | None,
    since: datetime,
    now: datetime,
) -> bool:
    """The user's new connection to the server, in place of any other; False (nothing
    kept) when the user was erased after the sign-in began at ``since``. ``asked``: the
    scopes asked for, granted when the answer names none (RFC 6749, 5.1)."""
    with transaction.atomic():
        if erasures_of([user_id]).since(user_id, since):
            return False
        McpConnection.objects.update_or_create(
            user_id=user_id,
            server=server,
            defaults={
                "issuer": issuer,
                "client_id": client_id,
                "tokens": _sealed(token.access_token, token.refresh_token),
                "scopes": token.scope or asked or "",
                "expires_at": _expiry(token, now),
                "created_at": now,
                "refreshed_at": None,
            },
        )
    return True


def replace_tokens(grant: Grant, token: OAuthToken, now: datetime) -> bool:
    """A refresh's tokens in place of ``grant``'s (a refresh answer without a refresh
    token or scopes keeps the old ones, RFC 6749, 6); False when the connection is gone
    (revoked or erased meanwhile)."""
    changes: dict[str, object] = {
        "tokens": _sealed(token.access_token, token.refresh_token or grant.refresh_token),
        "expires_at": _expiry(token, now),
        "refreshed_at": now,
    }
    if token.scope:
        changes["scopes"] = token.scope
    return bool(McpConnection.objects.filter(id=grant.id).update(**changes))


def forget_grant(grant: Grant) -> None:
    """The connection of a grant that cannot be used or refreshed any more, unless it was
    replaced meanwhile (another refresh, a new sign-in)."""
    McpConnection.objects.filter(id=grant.id, tokens=grant.sealed).delete()


def _sealed(access_token: str, refresh_token: str | None) -> str:
    tokens = {"access_token": access_token}
    if refresh_token:
        tokens["refresh_token"] = refresh_token
    return seal("tokens", tokens)


def _expiry(token: OAuthToken, now: datetime) -> datetime | None:
    return now + timedelta(seconds=token.expires_in) if token.expires_in is not None else None
