"""When schedules are due: cron expressions (5 fields, UTC) read by ``croniter``, over
minutes of ``settings.GATEWAY_CRON_MINUTE_SECONDS`` seconds (60; tests shorten them).

A minute is numbered from the Unix epoch (``minute_now``); minute ``n`` is the UTC time
``n`` minutes after the epoch to the cron expression, and starts ``n`` times the
minute's length after the epoch on the clock. Its slot (``slot_of``) names it in the
lease of a firing."""

import time
from datetime import UTC, datetime, timedelta

from croniter import croniter
from django.conf import settings

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def minute_seconds() -> float:
    return float(settings.GATEWAY_CRON_MINUTE_SECONDS)


def minute_now(now: float | None = None) -> int:
    return int((time.time() if now is None else now) // minute_seconds())


def cron_time(minute: int) -> datetime:
    """The minute as the cron expression sees it."""
    return EPOCH + timedelta(minutes=minute)


def due(expression: str, minute: int) -> bool:
    return bool(croniter.match(expression, cron_time(minute)))


def slot_of(minute: int) -> str:
    return cron_time(minute).strftime("%Y-%m-%dT%H:%M")


def next_fire_at(expression: str, now: float | None = None) -> datetime:
    """When, on the clock, the next due minute after this one starts."""
    following = croniter(expression, cron_time(minute_now(now))).get_next(datetime)
    minute = int((following - EPOCH).total_seconds() // 60)
    return EPOCH + timedelta(seconds=minute * minute_seconds())
