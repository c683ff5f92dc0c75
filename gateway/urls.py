"""Root URLs: the API (every dialect's routes, ``inference.dialects.registry``),
``/admin`` (adminui, its OIDC login first), triggers' webhooks, health probes, metrics."""

from django.urls import include, path

from gateway import health, hooks, metrics
from inference.dialects import registry

urlpatterns = [
    path("", include(registry.urlpatterns)),
    path("admin/", include("adminui.urls")),
    path("hooks/<str:name>", hooks.webhook),
    path("healthz", health.healthz),
    path("readyz", health.readyz),
    path("metrics", metrics.metrics),
]
