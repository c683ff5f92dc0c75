"""The admin's guard and error middleware on hand-made requests (no server)."""

import html
import json
from pathlib import Path
from types import SimpleNamespace

import pytest
from asgiref.sync import async_to_sync
from django.http import HttpRequest, HttpResponse, HttpResponseBase, HttpResponseServerError
from django.middleware.csrf import CsrfViewMiddleware
from django.test import RequestFactory
from django_htmx.middleware import HtmxMiddleware

from adminui.access.guard import is_loopback, is_loopback_host
from adminui.access.open_admin import refusal
from adminui.rendering.errors import AdminErrorMiddleware
from agents.snapshot import ConfigHolder


def test_non_loopback_address_is_not_loopback() -> None:
    factory = RequestFactory()

    assert is_loopback(factory.get("/admin/", REMOTE_ADDR="127.0.0.1"))
    assert is_loopback(factory.get("/admin/", REMOTE_ADDR="::1"))
    assert not is_loopback(factory.get("/admin/", REMOTE_ADDR="10.1.2.3"))


@pytest.mark.parametrize(
    ("host", "allowed"),
    [
        ("localhost", True),
        ("LOCALHOST:8421", True),
        ("127.0.0.1:8421", True),
        ("[::1]:8421", True),
        ("localhost.attacker.example", False),
        ("127.0.0.1.nip.io", False),
        ("[::2]", False),
        ("", False),
    ],
)
def test_only_loopback_host_names_count_as_loopback_hosts(host: str, allowed: bool) -> None:
    request = RequestFactory().get("/admin/", HTTP_HOST=host, REMOTE_ADDR="127.0.0.1")

    assert is_loopback_host(request) is allowed


def test_django_server_error_on_admin_is_rendered_as_an_error_object() -> None:
    async def crashed(request: HttpRequest) -> HttpResponseBase:
        return HttpResponseServerError("<h1>Server Error (500)</h1>")

    request = RequestFactory().get("/admin/agents", HTTP_ACCEPT="application/json")
    response = async_to_sync(HtmxMiddleware(AdminErrorMiddleware(crashed)))(request)

    assert response.status_code == 500
    assert isinstance(response, HttpResponse)
    assert json.loads(response.content)["error"]["code"] == "internal"


def test_django_csrf_failure_view_is_the_admin_403_page(tmp_path: Path) -> None:
    config = tmp_path / "gateway.yaml"
    config.write_text(
        "providers: {openai: {api_key: k}}\nagents: [{name: a, provider: openai, model: m}]\n"
    )
    holder = ConfigHolder(config)
    holder.reload()
    request = RequestFactory().post("/elsewhere", {"a": "b"}, HTTP_ACCEPT="text/html")
    request.runtime = SimpleNamespace(holder=holder)  # type: ignore[attr-defined]
    HtmxMiddleware(lambda request: HttpResponse())(request)

    response = CsrfViewMiddleware(lambda request: HttpResponse()).process_view(
        request, lambda request: HttpResponse(), (), {}
    )

    assert response is not None and response.status_code == 403
    assert "CSRF check failed" in html.unescape(response.content.decode())
    assert "<title>403" in response.content.decode()


@pytest.mark.parametrize(
    ("kept", "field"),
    [
        ({"api_key": "sk-1"}, "api_key"),
        ({"billing": {"admin_key": "sk-admin-1"}}, "billing.admin_key"),
    ],
)
def test_the_open_admin_sends_no_stored_key_to_another_base_url(
    kept: dict[str, object], field: str
) -> None:
    before = {"providers": {"openai": {"base_url": "https://api.openai.com/v1", **kept}}}
    moved = {"providers": {"openai": {"base_url": "https://collector.example/v1", **kept}}}
    renewed = {"providers": {"openai": {"base_url": "https://collector.example/v1"}}}

    problem = refusal(before, moved)

    assert problem is not None
    assert problem.startswith(f"providers.openai.base_url would send the stored {field} ")
    assert refusal(before, renewed) is None
    assert refusal(before, before) is None
