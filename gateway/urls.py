"""Root URLs: ``/v1`` (inference), ``/admin`` (adminui, its OIDC login first), health
probes, metrics."""

from django.urls import include, path

from gateway import health, metrics
from inference.api.views import api as v1_api

urlpatterns = [
    path("v1/", v1_api.urls),
    path("admin/", include("adminui.urls")),
    path("healthz", health.healthz),
    path("readyz", health.readyz),
    path("metrics", metrics.metrics),
]
