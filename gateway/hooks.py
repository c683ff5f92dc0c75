"""``POST /hooks/{name}``: a trigger's webhook (docs/automation.md). The body must be
signed (``X-Gateway-Signature: sha256=<HMAC-SHA256 of the raw body>`` keyed with the
trigger's ``webhook.secret``): 401 otherwise, and nothing runs. A signed call is answered
202 ``{"run": <id>}`` at once; the run goes on in the background."""

from django.http import HttpRequest, JsonResponse
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST

from gateway import runtime


@csrf_exempt
@require_POST
async def webhook(request: HttpRequest, name: str) -> JsonResponse:
    answer = await runtime.current().webhook(
        name, request.body, request.headers.get("X-Gateway-Signature")
    )
    return JsonResponse(answer.body, status=answer.status)
