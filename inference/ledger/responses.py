"""Stored Responses (docs/responses.md): each kept for its user 30 days, found again by
id only for that user, and followed back along ``previous_response_id``.

Every function here is one unit of work on a database thread (``in_database``).
"""

import re
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from django.db import transaction

from inference.erasures import erasures_of
from inference.models import StoredResponse

KEPT_FOR = timedelta(days=30)
PURGE_EVERY = 600.0  # seconds between two removals of expired responses
MAX_CHAIN = 1000  # responses followed back from one previous_response_id
_last_purge = float("-inf")
# What a stored response's id can look like; anything else is not looked up (a NUL or
# a lone surrogate is not even a valid query parameter everywhere).
_RESPONSE_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")


class ResponseNotFound(LookupError):
    """No stored response of that id for that user (unknown, expired, another user's,
    or answered with ``store: false``)."""


@dataclass(frozen=True)
class ItemPage:
    """One page of a stored response's input items, as OpenAI lists them."""

    items: list[dict[str, Any]]
    has_more: bool


def keep_response(
    user_id: str,
    response: dict[str, Any],
    input_items: list[dict[str, Any]],
    previous_id: str | None,
    now: datetime,
    started: datetime,
) -> None:
    """Keep a finished response (not when its user was erased since the request
    began at ``started``); every ``PURGE_EVERY`` seconds, remove expired ones."""
    global _last_purge
    with transaction.atomic():
        if not erasures_of([user_id]).since(user_id, started):
            _store(user_id, response, input_items, previous_id, now)
    if time.monotonic() - _last_purge >= PURGE_EVERY:
        _last_purge = time.monotonic()
        StoredResponse.objects.filter(expires_at__lte=now).delete()


def _store(
    user_id: str,
    response: dict[str, Any],
    input_items: list[dict[str, Any]],
    previous_id: str | None,
    now: datetime,
) -> None:
    StoredResponse.objects.create(
        response_id=response["id"],
        user_id=user_id,
        previous_id=previous_id or "",
        created_at=now,
        expires_at=now + KEPT_FOR,
        input_items=input_items,
        response=response,
    )


def stored_response(user_id: str, response_id: str, now: datetime) -> StoredResponse:
    if not _RESPONSE_ID.fullmatch(response_id):
        raise ResponseNotFound(response_id)
    found = StoredResponse.objects.filter(
        response_id=response_id, user_id=user_id, expires_at__gt=now
    ).first()
    if found is None:
        raise ResponseNotFound(response_id)
    return found


def conversation_before(user_id: str, response_id: str, now: datetime) -> list[dict[str, Any]]:
    """The items of the chain that ends with ``response_id``, oldest first: each
    response's input items, then its output. One query per response of the chain; a
    link that expired ends it there."""
    chain = [stored_response(user_id, response_id, now)]
    while (previous := chain[-1].previous_id) and len(chain) < MAX_CHAIN:
        link = StoredResponse.objects.filter(
            response_id=previous, user_id=user_id, expires_at__gt=now
        ).first()
        if link is None:
            break
        chain.append(link)
    items: list[dict[str, Any]] = []
    for stored in reversed(chain):
        items += stored.input_items
        items += stored.response.get("output", [])
    return items


def delete_response(user_id: str, response_id: str, now: datetime) -> None:
    stored_response(user_id, response_id, now)  # the same 404 for an id it cannot be
    deleted, _ = StoredResponse.objects.filter(
        response_id=response_id, user_id=user_id, expires_at__gt=now
    ).delete()
    if not deleted:
        raise ResponseNotFound(response_id)


def input_items_page(
    user_id: str, response_id: str, now: datetime, limit: int, after: str | None, order: str
) -> ItemPage:
    """``limit`` input items after the one with id ``after``, newest first for ``desc``."""
    items = list(stored_response(user_id, response_id, now).input_items)
    if order == "desc":
        items.reverse()
    if after is not None:
        ids = [item.get("id") for item in items]
        items = items[ids.index(after) + 1 :] if after in ids else []
    return ItemPage(items[:limit], len(items) > limit)
