"""``POST /hooks/{name}``: a trigger's webhook (docs/automation.md). The body must be
signed (``X-Gateway-Timestamp`` and ``X-Gateway-Signature``, ``inference.automation.
signing``) with the trigger's ``webhook.secret``: 401 otherwise, 409 for a signature
already accepted, and nothing runs. A body over ``limits.webhook_max_body_kb`` is 413
before anything reads it. A signed call is answered 202 ``{"run": <id>}`` at once; the
run goes on in the background."""

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from core.bodylimit import too_large
from gateway import runtime
from inference.automation.signing import SIGNATURE_HEADER, TIMESTAMP_HEADER

HOOKS = "/hooks/"  # the webhooks' paths: /hooks/<name>


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
    answer = await runtime.current().webhook(
        name,
        request.body,
        request.headers.get(SIGNATURE_HEADER),
        request.headers.get(TIMESTAMP_HEADER),
    )
    return JsonResponse(answer.body, status=answer.status)
