"""Root URLs: the API (every dialect's routes, ``inference.dialects.registry``),
``/admin`` (adminui, its OIDC login first), triggers' webhooks, health probes, metrics,
and the browser's routes that connect users' accounts at MCP servers
(``/mcp/{server}/…``; ``/mcp`` itself is the API's)."""

from django.urls import URLResolver, include, path
from django.urls.resolvers import RoutePattern

from gateway import health, hooks, mcp_accounts, metrics
from inference.dialects import registry

urlpatterns = [
    path("", include(registry.urlpatterns)),
    # Named, not imported: Django's resolver imports a urlconf given by name when a path
    # under it is first resolved (as it does ROOT_URLCONF), so a process that serves only
    # the API never loads the admin's pages (about 6 MB).
    URLResolver(RoutePattern("admin/", is_endpoint=False), "adminui.urls"),
    path("hooks/<str:name>", hooks.webhook),
    path("healthz", health.healthz),
    path("readyz", health.readyz),
    path("metrics", metrics.metrics),
    path("mcp/<str:server>/connect", mcp_accounts.connect, name="mcp_connect"),
    path("mcp/<str:server>/connect-link", mcp_accounts.connect_link),
    path("mcp/<str:server>/callback", mcp_accounts.callback, name="mcp_callback"),
    # Coulisse's callback path, as a static client's redirect_uri may name it.
    path("mcp/<str:server>/oauth/callback", mcp_accounts.callback),
]
