"""Who may use ``/admin`` at all: loopback clients (until ``auth.admin``), with CSRF for forms.

Without ``auth.admin`` only clients on this machine may use the admin, and a request that
carries any header a proxy sets (``PROXY_HEADERS``) came through one: it does not count as
loopback, whatever its address. With ``auth.admin`` the admin answers any address and any host name, since every
request is authenticated first (``adminui.access.auth``, the middleware before this one).

DNS rebinding: a page from another site whose name the attacker then points at 127.0.0.1
runs in a browser on this machine and counts as same-origin, so its requests come from
loopback and skip CORS preflights. Its ``Host`` header still carries the attacker's name,
so while the admin checks no credentials the host must also be ``localhost``,
``127.0.0.1`` or ``[::1]``.

CSRF: a browser on another site can send, without asking the server first, a POST with a
form or text body (or none). Those requests need Django's CSRF token; JSON and YAML bodies
cannot be sent cross-site without a preflight, so scripts send them without one.
"""

import ipaddress
from typing import cast

from django.http import HttpRequest, HttpResponse, HttpResponseBase
from django.http.request import split_domain_port
from django.middleware.csrf import CsrfViewMiddleware

from adminui.context import AdminRequest, admin_scope
from adminui.rendering.errors import AdminError, error_response, is_admin_path
from core.asyncmiddleware import AsyncMiddleware

_SIMPLE_TYPES = frozenset(
    {"application/x-www-form-urlencoded", "multipart/form-data", "text/plain"}
)
_LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "[::1]"})


class AdminGuardMiddleware(AsyncMiddleware):
    async def __call__(self, request: HttpRequest) -> HttpResponseBase:
        if is_admin_path(request.path):
            admin_request = cast(AdminRequest, request)
            refusal = refusal_of(admin_request)
            if refusal is not None:
                return error_response(admin_request, refusal)
        return await self.get_response(request)


def refusal_of(request: AdminRequest) -> AdminError | None:
    if not _admin_auth_configured(request):
        if not is_loopback(request):
            return AdminError(403, _remote_message(request), "admin_loopback_only")
        if not is_loopback_host(request):
            return AdminError(403, _host_message(request), "admin_loopback_host_only")
    if needs_csrf(request) and _csrf_rejected(request):
        return _CSRF_FAILED
    return None


_CSRF_FAILED = AdminError(
    403,
    "CSRF check failed: the form's security token is missing or no longer valid (it expires "
    "with the csrftoken cookie), or the form was sent from another site. Reload the page and "
    "submit the form again (scripts: send JSON or YAML bodies, which need no token).",
    "csrf_failed",
)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """Django's CSRF failure view (``CSRF_FAILURE_VIEW``): the admin's own 403 page."""
    return error_response(cast(AdminRequest, request), _CSRF_FAILED)


# Headers a reverse proxy adds: a proxy on this machine makes every client look local.
PROXY_HEADERS = (
    "Forwarded",
    "X-Forwarded-For",
    "X-Forwarded-Host",
    "X-Real-IP",
    "X-Client-IP",
    "True-Client-IP",
)


def is_loopback(request: HttpRequest) -> bool:
    if any(header in request.headers for header in PROXY_HEADERS):
        return False
    try:
        address = ipaddress.ip_address(request.META.get("REMOTE_ADDR") or "")
    except ValueError:
        return False
    mapped = getattr(address, "ipv4_mapped", None)
    return (mapped or address).is_loopback


def is_loopback_host(request: HttpRequest) -> bool:
    """Whether the ``Host`` header names this machine by a name no one else can point here."""
    return split_domain_port(request.META.get("HTTP_HOST", ""))[0] in _LOOPBACK_HOSTS


def needs_csrf(request: HttpRequest) -> bool:
    if request.method in ("GET", "HEAD", "OPTIONS", "TRACE"):
        return False
    return request.content_type in _SIMPLE_TYPES or (
        request.method == "POST" and not request.content_type
    )


def _csrf_rejected(request: HttpRequest) -> bool:
    def protected_view(request: HttpRequest) -> HttpResponse:
        return HttpResponse()

    check = CsrfViewMiddleware(protected_view)
    return check.process_view(request, protected_view, (), {}) is not None


def _admin_auth_configured(request: AdminRequest) -> bool:
    return admin_scope(request) is not None


def _host_message(request: AdminRequest) -> str:
    host = request.META.get("HTTP_HOST", "")
    return (
        f"The admin refuses the host name {host!r}: auth.admin is not configured, so it "
        "answers only requests addressed to localhost, 127.0.0.1 or [::1] (DNS-rebinding "
        "protection: a web page whose name was pointed at this machine must not reach the "
        "admin). Open the admin as http://localhost:<port>/admin, or configure auth.admin in "
        "the gateway's config file to use another host name."
    )


def _remote_message(request: AdminRequest) -> str:
    return (
        "The admin answers only clients on this machine (loopback) because auth.admin is "
        "not configured. To use it from elsewhere, add to the gateway's config file:\n"
        "auth:\n  admin:\n    basic: {username: admin, password: <a password hash from "
        "`python manage.py hash_password`>}\n"
        "(or oidc: {issuer_url: <your identity provider>, client_id: <its client id for the "
        "gateway>}), then sign in with that username and password. Requests through a proxy "
        "(Forwarded, X-Forwarded-For, X-Forwarded-Host, X-Real-IP, X-Client-IP or "
        "True-Client-IP headers) never count as loopback."
    )
