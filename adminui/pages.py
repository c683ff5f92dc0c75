"""What every admin page shows besides its own content: navigation and the config's health."""

import json
from typing import Any

from django.http import HttpRequest
from django.middleware.csrf import get_token

from gateway import runtime

NAVIGATION = (
    ("Overview", "/admin/"),
    ("Agents", "/admin/agents"),
    ("Experiments", "/admin/experiments"),
    ("Judges", "/admin/judges"),
    ("Providers", "/admin/providers"),
    ("MCP servers", "/admin/mcp"),
    ("Config file", "/admin/config"),
    ("Revisions", "/admin/revisions"),
    ("Conversations", "/admin/conversations"),
    ("Usage", "/admin/usage"),
)


def page_context(request: HttpRequest) -> dict[str, Any]:
    holder = runtime.current().holder
    path = request.path.rstrip("/") or "/"
    return {
        "navigation": [
            (label, url, path == url.rstrip("/") or path.startswith(url + "/"))
            for label, url in NAVIGATION
        ],
        "config_problems": holder.problems,
        # htmx sends it with every request (PUT and DELETE bodies carry no form token).
        "csrf_headers": json.dumps({"X-CSRFToken": get_token(request)}),
        "config_path": str(holder.path),
    }
