"""``auth.admin``: who may use the admin once it is configured (docs/admin.md, "Who may use the admin").

``basic``: every request carries ``Authorization: Basic`` (browsers ask once and resend
it), checked like ``/v1``'s (``core.auth.basicauth``). ``oidc``: a browser logs in at the
identity provider (``adminui.access.oidc_login``) and then carries a Django session; scripts may
send ``Authorization: Bearer <ID token>`` of the same client instead. The authenticated
name lands on ``request.admin_user`` (revisions record it as their author).

Without ``auth.admin`` nothing is checked here: ``adminui.access.guard`` then admits loopback
clients only.
"""

import hashlib
from typing import cast
from urllib.parse import urlencode, urlparse

from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseRedirect

from adminui.context import AdminRequest, admin_scope
from adminui.rendering.errors import AdminError, error_response, is_admin_path
from adminui.rendering.negotiation import is_html
from agents.schema import AuthScope, OidcAuth
from core.asyncmiddleware import AsyncMiddleware
from core.auth import credentials
from core.auth.oidc import InvalidToken, ProviderUnavailable

LOGIN_PATH = "/admin/auth/login"
CALLBACK_PATH = "/admin/auth/callback"
LOGGED_OUT_PATH = "/admin/auth/logged-out"
# Session keys of a logged-in admin.
SESSION_USER = "admin_user"
SESSION_PROVIDER = "admin_provider"
SESSION_ID_TOKEN = "admin_id_token"

# Served outside /admin, for whoever may use the admin (gateway.metrics).
_ADMIN_ONLY_OUTSIDE_ADMIN = ("/metrics",)
_OPEN_PATHS = frozenset({LOGIN_PATH, CALLBACK_PATH, LOGGED_OUT_PATH})


def provider_key(oidc: OidcAuth) -> str:
    """Ties a session to the identity provider and client it was opened with."""
    return hashlib.sha256(f"{oidc.issuer_url}\x00{oidc.client_id}".encode()).hexdigest()


class AdminAuthMiddleware(AsyncMiddleware):
    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        admin_request = cast(AdminRequest, request)
        admin_request.admin_user = None
        scope = admin_scope(admin_request)
        if (
            scope is not None
            and scope.oidc is not None
            and _returns_from_login(request, scope.oidc)
        ):
            return HttpResponseRedirect(f"{CALLBACK_PATH}?{request.GET.urlencode()}")
        protected = is_admin_path(request.path) or request.path in _ADMIN_ONLY_OUTSIDE_ADMIN
        if scope is None or not protected or request.path in _OPEN_PATHS:
            return await self.get_response(request)
        try:
            admin_request.admin_user = await principal(admin_request, scope)
        except AdminError as error:
            return _challenge(admin_request, scope, error)
        if admin_request.admin_user is None:
            return _challenge(admin_request, scope, None)
        return await self.get_response(request)


def _returns_from_login(request: HttpRequest, oidc: OidcAuth) -> bool:
    """The provider sends the browser back to ``redirect_url``, whatever path it names;
    the login is completed at ``CALLBACK_PATH``."""
    path = urlparse(oidc.redirect_url).path if oidc.redirect_url else CALLBACK_PATH
    return request.path == path != CALLBACK_PATH and "state" in request.GET


async def principal(request: AdminRequest, scope: AuthScope) -> str | None:
    """Who the request authenticates as under ``scope``, or None (``AdminError`` for a
    refused bearer token or an unreachable identity provider)."""
    try:
        name = await credentials.principal(request.headers.get("Authorization"), scope)
    except InvalidToken as error:
        raise AdminError(401, f"The bearer token was refused: {error}", "invalid_token") from error
    except ProviderUnavailable as error:
        raise AdminError(503, f"The identity provider cannot be reached: {error}", "idp") from error
    if (
        name is None
        and scope.oidc is not None
        and await request.session.aget(SESSION_PROVIDER) == provider_key(scope.oidc)
    ):
        return await request.session.aget(SESSION_USER)
    return name


def _challenge(request: AdminRequest, scope: AuthScope, error: AdminError | None) -> HttpResponse:
    if scope.basic is not None:
        error = AdminError(
            401, "The admin requires the credentials of auth.admin.basic", "login_required"
        )
        response = error_response(request, error)
        response["WWW-Authenticate"] = 'Basic realm="gateway admin", charset="UTF-8"'
        return response
    if error is None and request.method in ("GET", "HEAD") and is_html(request):
        return HttpResponseRedirect(f"{LOGIN_PATH}?{urlencode({'next': request.get_full_path()})}")
    error = error or AdminError(
        401,
        f"Log in to the admin in a browser at {LOGIN_PATH}, or send "
        "Authorization: Bearer <an ID token of auth.admin.oidc's client>",
        "login_required",
    )
    response = error_response(request, error)
    if error.status == 401:
        response["WWW-Authenticate"] = 'Bearer realm="gateway admin"'
    return response
