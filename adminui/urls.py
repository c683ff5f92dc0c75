"""The admin's URLs: its OIDC login pages (plain Django views: a browser is redirected
through them) and the admin API, which serves every other page and route under
``/admin/``."""

from django.urls import path

from adminui.access import oidc_login
from adminui.api import api

urlpatterns = [
    path("auth/login", oidc_login.login, name="admin-login"),
    path("auth/callback", oidc_login.callback, name="admin-login-callback"),
    path("auth/logout", oidc_login.logout, name="admin-logout"),
    path("auth/logged-out", oidc_login.logged_out, name="admin-logged-out"),
    path("", api.urls),
]
