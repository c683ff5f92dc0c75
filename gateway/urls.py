"""Root URLs: ``/v1`` (inference), ``/admin`` (adminui), health probes, metrics."""

from django.urls import path

from adminui.api import api as admin_api
from gateway import health, metrics
from inference.api import api as v1_api

urlpatterns = [
    path("v1/", v1_api.urls),
    path("admin/", admin_api.urls),
    path("healthz", health.healthz),
    path("readyz", health.readyz),
    path("metrics", metrics.metrics),
]
