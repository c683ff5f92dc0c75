"""Minted API keys (docs/cost-and-keys.md): list, create (the key is shown once),
inspect and revoke. Only a digest of each key is stored (``inference.money.keys``)."""

from datetime import datetime
from typing import Any, Literal, cast

from django.urls import reverse
from django.utils import timezone
from ninja import Router
from ninja.responses import Status
from pydantic import BaseModel, SkipValidation, ValidationError

from adminui.context import AdminRequest
from adminui.rendering.bodies import form_data
from adminui.rendering.errors import AdminError
from adminui.rendering.negotiation import is_form, is_html, respond, written
from adminui.rendering.paging import page
from adminui.schemas import errors
from inference.money import keys

router = Router(tags=["keys"])


class KeyOut(BaseModel):
    id: int
    name: str
    user: str
    prefix: str
    created_at: datetime
    last_used_at: datetime | None
    expires_at: datetime | None
    revoked_at: datetime | None
    agents: list[str] | None
    guardrails: list[str]
    rpm: int | None
    tpm: int | None
    budget_usd: float | None
    budget_window: str
    spent_usd: float
    spent_window_usd: float


class KeyCreated(KeyOut):
    key: str  # the only time it is shown


class KeyPage(BaseModel):
    data: list[KeyOut]
    next: str | None


class KeyIn(BaseModel):
    """A new key (see ``inference.money.keys.KeySpec`` for the rules)."""

    name: str
    user: str
    budget_usd: float | None = None
    budget_window: Literal["total", "day", "month"] = "total"
    rpm: int | None = None
    tpm: int | None = None
    agents: list[str] | None = None
    guardrails: list[str] = []
    expires_at: datetime | None = None


@router.get(
    "/keys",
    response={200: KeyPage, **errors()},
    operation_id="list_keys",
    url_name="keys",
    summary="Minted API keys, newest first, with their spend (never the keys themselves)",
)
def list_keys(request: AdminRequest, cursor: str | None = None) -> Any:
    rows, following = page(keys.keys_before, cursor)
    data = {"data": _described(rows), "next": following}
    return respond(request, data, "adminui/keys.html", **_page_context(request))


@router.post(
    "/keys",
    response={201: KeyCreated, **errors(422)},
    operation_id="create_key",
    url_name="keys_create",
    summary="Mint a key for a user: the answer holds the key, which is shown only this once",
)
def create_key(request: AdminRequest, payload: SkipValidation[KeyIn]) -> Any:
    # Unvalidated here (a form arrives as an empty mapping): KeySpec checks it below.
    fields = _form_fields(request) if is_form(request) else cast(dict[str, Any], payload)
    try:
        spec = keys.KeySpec.model_validate(fields)
    except ValidationError as error:
        problems = [
            f"{'.'.join(str(part) for part in item['loc']) or '(body)'}: {item['msg']}"
            for item in error.errors()
        ]
        raise AdminError(
            422, "The key cannot be created: " + "; ".join(problems), "invalid", problems
        ) from error
    config = request.runtime.holder.config
    undefined = [name for name in spec.guardrails if config is None or not config.guardrail(name)]
    if undefined:
        problem = f"guardrails: not defined in the config: {', '.join(undefined)}"
        raise AdminError(422, f"The key cannot be created: {problem}", "invalid", [problem])
    key, secret = keys.create_key(spec)
    created = {**_described([key])[0], "key": secret}
    if is_html(request):
        return respond(
            request,
            {"data": _described(keys.keys_before(None, 50)), "next": None},
            "adminui/keys.html",
            status=201,
            created=created,
            **_page_context(request),
        )
    return Status(201, created)


@router.get(
    "/keys/{key_id}",
    response={200: KeyOut, **errors(404)},
    operation_id="read_key",
    url_name="key",
    summary="One key: its limits and spend (never the key itself)",
)
def read_key(request: AdminRequest, key_id: int) -> Any:
    return respond(request, _described([_found(key_id)])[0], "adminui/key.html")


@router.delete(
    "/keys/{key_id}",
    response={200: KeyOut, **errors(404)},
    operation_id="revoke_key",
    url_name="key_revoke",
    summary="Revoke a key: refused by every process within a second; its record stays",
)
def revoke_key(request: AdminRequest, key_id: int) -> Any:
    _found(key_id)
    revoked = keys.revoke_key(key_id, timezone.now())
    assert revoked is not None
    return written(request, reverse("admin:keys"), _described([revoked])[0])


@router.post(
    "/keys/{key_id}/revoke",
    response={200: KeyOut, **errors(404)},
    operation_id="revoke_key_by_form",
    url_name="key_revoke_form",
    summary="Revoke a key (the same, for HTML forms)",
)
def revoke_key_by_form(request: AdminRequest, key_id: int) -> Any:
    return revoke_key(request, key_id)


def _found(key_id: int) -> keys.ApiKey:
    key = keys.key_by_id(key_id)
    if key is None:
        raise AdminError(404, f"API key {key_id} does not exist", "not_found")
    return key


def _form_fields(request: AdminRequest) -> dict[str, Any]:
    """The form's fields: empty ones left out, agents and guardrails as comma-separated
    lists."""
    form = form_data(request)
    fields: dict[str, Any] = {
        name: str(form[name]).strip()
        for name in ("name", "user", "budget_usd", "budget_window", "rpm", "tpm", "expires_at")
        if form.get(name, "").strip()
    }
    for listing in ("agents", "guardrails"):
        listed = str(form.get(listing) or "")
        names = [name.strip() for name in listed.split(",") if name.strip()]
        if names:
            fields[listing] = names
    return fields


def _described(rows: list[keys.ApiKey]) -> list[dict[str, Any]]:
    spend = keys.spend_of(rows, timezone.now())
    return [
        {
            "id": key.id,
            "name": key.name,
            "user": key.user_id,
            "prefix": key.prefix,
            "created_at": key.created_at,
            "last_used_at": key.last_used_at,
            "expires_at": key.expires_at,
            "revoked_at": key.revoked_at,
            "agents": key.agents,
            "guardrails": key.guardrails or [],
            "rpm": key.rpm,
            "tpm": key.tpm,
            "budget_usd": None if key.budget_micro_usd is None else key.budget_micro_usd / 1e6,
            "budget_window": key.budget_window,
            "spent_usd": spend[key.id][0] / 1e6,
            "spent_window_usd": spend[key.id][1] / 1e6,
        }
        for key in rows
    ]


def _page_context(request: AdminRequest) -> dict[str, Any]:
    config = request.runtime.holder.config
    proxy = config.proxy_auth if config is not None else None
    return {"keys_on": proxy is not None and proxy.takes_api_keys, "now": timezone.now()}
