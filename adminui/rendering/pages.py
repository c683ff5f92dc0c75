"""What every admin page shows besides its own content: navigation and the config's health.

``page_context`` is a context processor (see ``TEMPLATES`` in the settings): every template
rendered for a request gets it, so no view has to remember it."""

import json
from typing import Any, cast

from django.http import HttpRequest
from django.middleware.csrf import get_token
from django.urls import reverse

from adminui.context import AdminRequest, admin_scope
from agents.resources import RESOURCES

# Pages of the navigation bar after the collections, by URL name.
_RECORD_PAGES = (
    ("Skills", "admin:skills"),
    ("Config file", "admin:config"),
    ("Revisions", "admin:revisions"),
    ("Scores", "admin:scores"),
    ("Evaluations", "admin:evaluations"),
    ("Conversations", "admin:conversations"),
    ("Requests", "admin:requests"),
    ("Memories", "admin:memories"),
    ("Guardrails", "admin:guardrail_events"),
    ("Triggers", "admin:triggers"),
    ("Smoke tests", "admin:smoke_tests"),
    ("Usage", "admin:usage"),
    ("Spend", "admin:spend"),
    ("Reconciliation", "admin:reconciliation"),
    ("API keys", "admin:keys"),
    ("MCP connections", "admin:mcp_connections"),
    ("Live", "admin:live"),
)


def navigation() -> list[tuple[str, str]]:
    """(label, URL) of every page in the navigation bar, in order."""
    pages = [
        ("Overview", "admin:overview"),
        *((resource.title, f"admin:{section}") for section, resource in RESOURCES.items()),
        *_RECORD_PAGES,
    ]
    return [(label, reverse(name)) for label, name in pages]


def page_context(request: HttpRequest) -> dict[str, Any]:
    if not hasattr(request, "runtime"):
        return {}  # rendered outside the request context middleware (Django's own pages)
    request = cast(AdminRequest, request)
    holder = request.runtime.holder
    pages = navigation()
    current = _current(request.path.rstrip("/") or "/", [url for _, url in pages])
    return {
        "navigation": [(label, url, url == current) for label, url in pages],
        "config_problems": holder.problems,
        # htmx sends it with every request (PUT and DELETE bodies carry no form token).
        "csrf_headers": json.dumps({"X-CSRFToken": get_token(request)}),
        "config_path": str(holder.path),
        "admin_user": getattr(request, "admin_user", None),
        "can_log_out": _logged_in_with_oidc(request),
    }


def _current(path: str, urls: list[str]) -> str | None:
    """The page of the navigation ``path`` is on or under: the deepest one
    (``/admin/mcp/connections`` is not the MCP servers' page)."""
    under = [url for url in urls if path == url.rstrip("/") or path.startswith(url + "/")]
    return max(under, key=len, default=None)


def _logged_in_with_oidc(request: AdminRequest) -> bool:
    """Whether the page offers a logout: a session at the identity provider's login."""
    scope = admin_scope(request)
    has_user = getattr(request, "admin_user", None) is not None
    return has_user and scope is not None and scope.oidc is not None
