"""Root URLs: ``/v1`` (inference), ``/admin`` (adminui, its OIDC login first), health
probes, metrics."""

from django.urls import path

from adminui.access import oidc_login
from adminui.api import api as admin_api
from gateway import health, metrics
from inference.api.views import api as v1_api

urlpatterns = [
    path("v1/", v1_api.urls),
    path("admin/auth/login", oidc_login.login, name="admin-login"),
    path("admin/auth/callback", oidc_login.callback, name="admin-login-callback"),
    path("admin/auth/logout", oidc_login.logout, name="admin-logout"),
    path("admin/auth/logged-out", oidc_login.logged_out, name="admin-logged-out"),
    path("admin/", admin_api.urls),
    path("healthz", health.healthz),
    path("readyz", health.readyz),
    path("metrics", metrics.metrics),
]
