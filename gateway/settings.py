"""Django settings for the gateway.

Everything an operator may change comes from the environment:

- ``GATEWAY_CONFIG``: path of the YAML config file (default ``gateway.yaml`` in the
  working directory).
- ``DATABASE_URL``: ``sqlite:///path.sqlite3`` or ``postgres://…`` (default a SQLite
  file ``gateway.sqlite3`` in the working directory).
- ``GATEWAY_SECRET_KEY``: Django's secret key (CSRF and sessions of the admin).
- ``GATEWAY_DEBUG``: ``1`` for Django's debug mode.
- ``REDIS_URL``: ``redis://host:port/db`` for the channel layer of the admin's live
  traffic page when several processes serve (default: in memory, one process).
- ``GATEWAY_CRON_MINUTE_SECONDS``: how long a minute of the triggers' schedules lasts
  (default 60; tests shorten it), ``GATEWAY_DELIVERY_BACKOFF_SECONDS``: the first wait
  before a delivery is tried again (default 1: then 4 and 16), ``GATEWAY_LEASE_SECONDS``:
  how long a process's heartbeat vouches for it (default 30: a task of a process silent
  that long runs again elsewhere; a deployment silent that long starts anew).
"""

import os
from pathlib import Path
from typing import Any

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent
WORKING_DIR = Path.cwd()

SECRET_KEY = os.environ.get("GATEWAY_SECRET_KEY", "gateway-insecure-development-key")
DEBUG = os.environ.get("GATEWAY_DEBUG", "") == "1"
ALLOWED_HOSTS = ["*"]

GATEWAY_CONFIG = Path(os.environ.get("GATEWAY_CONFIG", WORKING_DIR / "gateway.yaml")).resolve()

INSTALLED_APPS = [
    "gateway",  # first: its runserver (daphne's, on port 8421) must win over the others
    "daphne",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.staticfiles",
    "django_htmx",
    "core.environment.apps.CoreConfig",  # core's system checks
    "agents",
    "inference",
    "adminui",
]

MIDDLEWARE = [
    "gateway.middleware.RequestContextMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Django's middleware, hooks run on the event loop rather than in a thread each
    "core.inlinemiddleware.SecurityMiddleware",
    "core.inlinemiddleware.CommonMiddleware",
    "core.inlinemiddleware.SessionMiddleware",
    "core.inlinemiddleware.CsrfViewMiddleware",
    "adminui.rendering.errors.AdminErrorMiddleware",
    "adminui.access.auth.AdminAuthMiddleware",
    "adminui.access.guard.AdminGuardMiddleware",
]
# What an API request (a dialect's path) passes through instead (gateway.handler): the
# request context, the dialect's error shape, auth.proxy, the security headers and
# Content-Length. The admin's middleware (htmx, sessions, CSRF, the admin's errors, login
# and guard) has nothing to do there.
API_MIDDLEWARE = [
    "gateway.middleware.RequestContextMiddleware",
    "inference.api.middleware.ErrorShapeMiddleware",
    "inference.api.middleware.ProxyAuthMiddleware",
    "core.inlinemiddleware.SecurityMiddleware",
    "core.inlinemiddleware.CommonMiddleware",
]

# The admin's login session (auth.admin.oidc): a signed cookie, so every server process
# sharing GATEWAY_SECRET_KEY accepts it without a session table.
SESSION_ENGINE = "django.contrib.sessions.backends.signed_cookies"
SESSION_COOKIE_NAME = "gateway_admin_session"
SESSION_COOKIE_AGE = 8 * 3600

# A refused form anywhere is the admin's 403 page saying why (the admin guard checks its
# own forms first; this covers any other view Django protects).
CSRF_FAILURE_VIEW = "adminui.access.guard.csrf_failure"

ROOT_URLCONF = "gateway.urls"
ASGI_APPLICATION = "gateway.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "adminui.rendering.pages.page_context",
            ]
        },
    }
]


def _database(url: str) -> dict[str, Any]:
    # Connections live on in the worker threads of the /v1 pipeline (inference.database),
    # which checks one before reuse after a second idle (not before every unit of work).
    database = dj_database_url.parse(url, conn_max_age=600, conn_health_checks=False)
    if database["ENGINE"] == "django.db.backends.sqlite3":
        # WAL + immediate transactions let several server processes share one file
        # without "database is locked" on read-then-write transactions.
        database["OPTIONS"] = {
            "transaction_mode": "IMMEDIATE",
            "timeout": 5,
            "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
        }
    return dict(database)


DATABASES = {
    "default": _database(
        os.environ.get("DATABASE_URL", f"sqlite:///{WORKING_DIR / 'gateway.sqlite3'}")
    )
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

USE_TZ = True
TIME_ZONE = "UTC"
LANGUAGE_CODE = "en-us"
USE_I18N = False

# Body sizes are limited in front of Django (core.bodylimit): limits.max_body_mb on /v1,
# 1 MiB elsewhere.
DATA_UPLOAD_MAX_MEMORY_SIZE = None

STATIC_URL = "static/"

# Every line on stderr is one JSON object: the request lines, the gateway's own events,
# and what Django and the server (daphne, twisted) log, tracebacks included.
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"json": {"()": "core.logformat.JsonFormatter"}},
    "handlers": {"stderr": {"class": "logging.StreamHandler", "formatter": "json"}},
    "root": {"handlers": ["stderr"], "level": "INFO"},
    "loggers": {
        "django": {"handlers": [], "level": "INFO", "propagate": True},
        "django.request": {"level": "ERROR"},
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},  # the MCP SDK's HTTP client
    },
}

# The admin's live traffic page (adminui.records.live) gets finished requests through a channel
# layer: in memory within one process, Redis to reach pages open on any worker.
REDIS_URL = os.environ.get("REDIS_URL", "")
CHANNEL_LAYERS = {
    "default": (
        {"BACKEND": "channels_redis.core.RedisChannelLayer", "CONFIG": {"hosts": [REDIS_URL]}}
        if REDIS_URL
        else {"BACKEND": "channels.layers.InMemoryChannelLayer"}
    )
}

# Automation (docs/automation.md).
GATEWAY_CRON_MINUTE_SECONDS = float(os.environ.get("GATEWAY_CRON_MINUTE_SECONDS", "60"))
GATEWAY_DELIVERY_BACKOFF_SECONDS = float(os.environ.get("GATEWAY_DELIVERY_BACKOFF_SECONDS", "1"))
GATEWAY_LEASE_SECONDS = float(os.environ.get("GATEWAY_LEASE_SECONDS", "30"))
