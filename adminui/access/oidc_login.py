"""Logging in to the admin at the identity provider of ``auth.admin.oidc``.

The authorization code flow with PKCE (S256), ``state`` and ``nonce``, through authlib's
httpx client (``AsyncOAuth2Client``: nothing blocks the event loop). What the flow needs to
remember between the redirect and the callback (state, nonce, code verifier, the page to
return to) waits in the Django session; after the callback the session holds who logged
in, under a new session key. ``client_secret`` is optional: without one the gateway is a
public client, which PKCE protects.

authlib's client is imported when a login starts, not with this module: it brings a
second HTTP stack (about 14 MB in every server process), which a gateway without an
OIDC admin login never uses.
"""

import hmac
from typing import TYPE_CHECKING
from urllib.parse import urlencode, urlparse

import httpx
from authlib.common.security import generate_token
from django.http import HttpResponse, HttpResponseRedirect
from django.views.decorators.http import require_GET, require_POST

from adminui.access.auth import (
    CALLBACK_PATH,
    LOGGED_OUT_PATH,
    SESSION_ID_TOKEN,
    SESSION_PROVIDER,
    SESSION_USER,
    provider_key,
)
from adminui.context import AdminRequest, admin_scope
from adminui.rendering.errors import AdminError, error_response
from adminui.rendering.negotiation import render
from agents.schema import OidcAuth
from core.auth.oidc import InvalidToken, ProviderUnavailable, provider_for

if TYPE_CHECKING:
    from authlib.integrations.httpx_client import AsyncOAuth2Client

_SESSION_LOGIN = "admin_login"  # the flow in progress
_NAME_CLAIMS = ("preferred_username", "email", "sub")


@require_GET
async def login(request: AdminRequest) -> HttpResponse:
    oidc = _configured(request)
    if isinstance(oidc, HttpResponse):
        return oidc
    try:
        metadata = await provider_for(oidc.issuer_url).metadata()
    except ProviderUnavailable as error:
        return _failure(request, 503, f"The identity provider cannot be reached: {error}")
    verifier, nonce = generate_token(48), generate_token(24)
    async with _client(request, oidc) as client:
        url, state = client.create_authorization_url(
            metadata.authorization_endpoint, code_verifier=verifier, nonce=nonce
        )
    pending = {"state": state, "nonce": nonce, "verifier": verifier, "next": _next(request)}
    await request.session.aset(_SESSION_LOGIN, pending)
    return HttpResponseRedirect(url)


@require_GET
async def callback(request: AdminRequest) -> HttpResponse:
    oidc = _configured(request)
    if isinstance(oidc, HttpResponse):
        return oidc
    pending = await request.session.apop(_SESSION_LOGIN, None)
    state = request.GET.get("state", "")
    if not isinstance(pending, dict) or not hmac.compare_digest(
        state.encode(), pending["state"].encode()
    ):
        return _failure(request, 400, "This login is unknown or expired: log in again.")
    if "error" in request.GET:
        reason = request.GET.get("error_description") or request.GET["error"]
        return _failure(request, 401, f"The identity provider refused the login: {reason}")
    from authlib.integrations.base_client.errors import OAuthError

    provider = provider_for(oidc.issuer_url)
    try:
        metadata = await provider.metadata()
        async with _client(request, oidc) as client:
            token = await client.fetch_token(
                metadata.token_endpoint,
                code=request.GET.get("code", ""),
                code_verifier=pending["verifier"],
            )
        claims = await provider.verify(
            str(token.get("id_token", "")), oidc.client_id, nonce=pending["nonce"]
        )
    except (OAuthError, InvalidToken) as error:
        return _failure(request, 401, f"The login could not be completed: {error}")
    except (ProviderUnavailable, httpx.HTTPError) as error:
        return _failure(request, 503, f"The identity provider cannot be reached: {error}")
    await request.session.acycle_key()
    await request.session.aset(
        SESSION_USER, next(str(claims[c]) for c in _NAME_CLAIMS if c in claims)
    )
    await request.session.aset(SESSION_PROVIDER, provider_key(oidc))
    await request.session.aset(SESSION_ID_TOKEN, token["id_token"])
    return HttpResponseRedirect(pending["next"])


@require_POST
async def logout(request: AdminRequest) -> HttpResponse:
    """Ends the admin's session, then the provider's when it offers RP-initiated logout."""
    id_token = await request.session.aget(SESSION_ID_TOKEN)
    await request.session.aflush()
    scope = admin_scope(request)
    back = request.build_absolute_uri(LOGGED_OUT_PATH)
    if scope is None or scope.oidc is None or id_token is None:
        return HttpResponseRedirect(LOGGED_OUT_PATH)
    try:
        metadata = await provider_for(scope.oidc.issuer_url).metadata()
    except ProviderUnavailable:
        return HttpResponseRedirect(LOGGED_OUT_PATH)
    if metadata.end_session_endpoint is None:
        return HttpResponseRedirect(LOGGED_OUT_PATH)
    query = {
        "id_token_hint": id_token,
        "client_id": scope.oidc.client_id,
        "post_logout_redirect_uri": back,
    }
    return HttpResponseRedirect(f"{metadata.end_session_endpoint}?{urlencode(query)}")


@require_GET
async def logged_out(request: AdminRequest) -> HttpResponse:
    return render(request, "adminui/logged_out.html", {}).render()


def _client(request: AdminRequest, oidc: OidcAuth) -> "AsyncOAuth2Client":
    from authlib.integrations.httpx_client import AsyncOAuth2Client

    scopes = ["openid", *(scope for scope in oidc.scopes if scope != "openid")]
    return AsyncOAuth2Client(
        client_id=oidc.client_id,
        client_secret=oidc.client_secret or None,
        token_endpoint_auth_method="client_secret_basic" if oidc.client_secret else "none",
        scope=" ".join(scopes),
        redirect_uri=oidc.redirect_url or request.build_absolute_uri(CALLBACK_PATH),
        code_challenge_method="S256",
        timeout=10,
    )


def _configured(request: AdminRequest) -> OidcAuth | HttpResponse:
    scope = admin_scope(request)
    if scope is None or scope.oidc is None:
        message = "auth.admin.oidc is not configured: there is no login at the identity provider"
        return error_response(request, AdminError(404, message, "oidc_not_configured"))
    return scope.oidc


def _next(request: AdminRequest) -> str:
    """The admin page to return to: only a path on this server, never another site."""
    target = request.GET.get("next", "")
    parsed = urlparse(target)
    if parsed.scheme or parsed.netloc or not target.startswith("/admin"):
        return "/admin/"
    return target


def _failure(request: AdminRequest, status: int, message: str) -> HttpResponse:
    return error_response(request, AdminError(status, message, "login_failed"))
