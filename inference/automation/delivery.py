"""A run's reply POSTed to its trigger's ``deliver.url``: ``{trigger, run, reply,
usage}`` signed with ``deliver.secret``, tried again 3 times after 1, 4 and 16 times
``settings.GATEWAY_DELIVERY_BACKOFF_SECONDS`` (1 s) when it fails (an error status or
no answer)."""

import asyncio
import json
import logging
from typing import Any

import httpx
from django.conf import settings

from agents.schema import DeliverConfig
from core.logformat import log_event
from inference.automation.signing import signed_headers

logger = logging.getLogger("gateway.automation")
RETRIES = 3
TIMEOUT = 30.0


def backoffs() -> list[float]:
    base = float(settings.GATEWAY_DELIVERY_BACKOFF_SECONDS)
    return [base * 4**retry for retry in range(RETRIES)]


async def deliver(target: DeliverConfig, payload: dict[str, Any]) -> bool:
    """Whether a try was answered with a 2xx status."""
    body = json.dumps(payload).encode()
    waits = backoffs()
    async with httpx.AsyncClient(timeout=TIMEOUT) as client:
        for attempt in range(RETRIES + 1):
            # Signed anew for each try: a receiver refuses a timestamp out of its window.
            headers = {"Content-Type": "application/json", **signed_headers(target.secret, body)}
            try:
                response = await client.post(target.url, content=body, headers=headers)
                outcome = str(response.status_code)
                if response.is_success:
                    log_event(logger, "delivered", run=payload["run"], attempt=attempt + 1)
                    return True
            except httpx.HTTPError as error:
                outcome = type(error).__name__
            log_event(
                logger, "delivery_failed", logging.WARNING, run=payload["run"],
                attempt=attempt + 1, outcome=outcome,
            )  # fmt: skip
            if attempt < RETRIES:
                await asyncio.sleep(waits[attempt])
    return False
