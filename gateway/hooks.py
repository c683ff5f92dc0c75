"""``POST /hooks/{name}``: a trigger's webhook (docs/automation.md). The body must be
signed (``X-Gateway-Timestamp`` and ``X-Gateway-Signature``, ``inference.automation.
signing``) with the trigger's ``webhook.secret``: 401 otherwise, 409 for a signature
already accepted, and nothing runs. A webhook without a secret (Coulisse's ``type:
webhook``) takes the credentials of ``/v1`` instead, when auth.proxy is configured. A body over ``limits.webhook_max_body_kb`` is 413
before anything reads it. A signed call is answered 202 ``{"run": <id>}`` at once; the
run goes on in the background."""

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from core.bodylimit import too_large
from gateway import runtime
from inference.automation.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER
from inference.neutral.errors import ApiError
from inference.serving.auth import Credential, KeyCache, authenticate_caller


@csrf_exempt
@require_POST
async def webhook(request: HttpRequest, name: str) -> JsonResponse:
    limit = too_large(request)
    if limit is not None:
        return JsonResponse(
            {
                "error": f"the body is larger than limits.webhook_max_body_kb ({limit} bytes)",
                "code": "request_too_large",
            },
            status=413,
        )
    refusal = await _unsigned_refusal(name, request.headers.get("Authorization"))
    if refusal is not None:
        return JsonResponse(
            {"error": refusal.message, "code": refusal.code},
            status=refusal.status,
            headers=refusal.headers,
        )
    answer = await runtime.current().webhook(
        name,
        request.body,
        request.headers.get(SIGNATURE_HEADER),
        request.headers.get(TIMESTAMP_HEADER),
    )
    return JsonResponse(answer.body, status=answer.status)


_KEYS = KeyCache()


async def _unsigned_refusal(name: str, authorization: str | None) -> ApiError | None:
    """Why a webhook without a secret (Coulisse's) refuses a call: it takes the
    credentials of ``/v1`` when auth.proxy is configured (open otherwise)."""
    config = runtime.current().holder.config
    trigger = config.hook(name) if config is not None else None
    if config is None or trigger is None or trigger.webhook is None or trigger.webhook.secret:
        return None
    proxy = config.proxy_auth
    if proxy is None:
        return None
    try:
        credential = Credential(authorization) if authorization is not None else None
        await authenticate_caller(credential, proxy, _KEYS)
    except ApiError as refusal:
        return refusal
    return None
