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

# The navigation's groups after the overview: (label, pages as (label, URL name)); the
# config group starts with the config file's collections.
_GROUPS: tuple[tuple[str, tuple[tuple[str, str], ...]], ...] = (
    (
        "Config",
        (
            ("Skills", "admin:skills"),
            ("Config file", "admin:config"),
            ("Revisions", "admin:revisions"),
        ),
    ),
    (
        "Traffic",
        (
            ("Live", "admin:live"),
            ("Requests", "admin:requests"),
            ("Conversations", "admin:conversations"),
            ("Memories", "admin:memories"),
            ("Scores", "admin:scores"),
            ("Guardrails", "admin:guardrail_events"),
        ),
    ),
    (
        "Money",
        (
            ("Usage", "admin:usage"),
            ("Spend", "admin:spend"),
            ("Reconciliation", "admin:reconciliation"),
        ),
    ),
    (
        "Automation",
        (
            ("Triggers", "admin:triggers"),
            ("Smoke tests", "admin:smoke_tests"),
            ("Evaluations", "admin:evaluations"),
            ("Batches", "admin:batches"),
        ),
    ),
    ("Access", (("API keys", "admin:keys"), ("MCP connections", "admin:mcp_connections"))),
)


def navigation() -> list[tuple[str, list[tuple[str, str]]]]:
    """The navigation bar: (group label, its pages as (label, URL)), the overview alone
    first (an empty label)."""
    collections = tuple(
        (resource.title, f"admin:{section}") for section, resource in RESOURCES.items()
    )
    groups: list[tuple[str, tuple[tuple[str, str], ...]]] = [
        ("", (("Overview", "admin:overview"),))
    ]
    for label, pages in _GROUPS:
        groups.append((label, collections + pages if label == "Config" else pages))
    return [(label, [(page, reverse(name)) for page, name in pages]) for label, pages in groups]


def page_context(request: HttpRequest) -> dict[str, Any]:
    if not hasattr(request, "runtime"):
        return {}  # rendered outside the request context middleware (Django's own pages)
    request = cast(AdminRequest, request)
    holder = request.runtime.holder
    groups = navigation()
    urls = [url for _, pages in groups for _, url in pages]
    current = _current(request.path.rstrip("/") or "/", urls)
    return {
        "navigation": [
            (group, [(label, url, url == current) for label, url in pages])
            for group, pages in groups
        ],
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
