"""When schedules are due: cron expressions (5 fields, UTC) read by ``croniter``, over
minutes of ``settings.GATEWAY_CRON_MINUTE_SECONDS`` seconds (60; tests shorten them).

A minute is numbered from the Unix epoch (``minute_now``); minute ``n`` starts ``n``
times the minute's length after the epoch on the clock, and is the UTC time ``n``
minutes after the epoch to the cron expression. Shortened minutes would run that time
centuries ahead, so there it goes round a cycle of 28 years (the calendar's weekdays
repeat over it). Its slot (``slot_of``) names it in the lease of a firing."""

import time
from datetime import UTC, datetime, timedelta

from django.conf import settings

EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
CYCLE = (28 * 365 + 7) * 24 * 60  # minutes in 28 years, 7 of them leap years


def minute_seconds() -> float:
    return float(settings.GATEWAY_CRON_MINUTE_SECONDS)


def minute_now(now: float | None = None) -> int:
    return int((time.time() if now is None else now) // minute_seconds())


def _shortened() -> bool:
    return minute_seconds() != 60


def cron_time(minute: int) -> datetime:
    """The minute as the cron expression sees it."""
    return EPOCH + timedelta(minutes=minute % CYCLE if _shortened() else minute)


def due(expression: str, minute: int) -> bool:
    # croniter (with dateutil, about a MB) loads with the first schedule, not in every
    # process.
    from croniter import croniter

    return bool(croniter.match(expression, cron_time(minute)))


def slot_of(minute: int) -> str:
    return cron_time(minute).strftime("%Y-%m-%dT%H:%M")


def next_fire_at(expression: str, now: float | None = None) -> datetime:
    """When, on the clock, the next due minute after this one starts."""
    from croniter import croniter

    current = minute_now(now)
    following = croniter(expression, cron_time(current)).get_next(datetime)
    minute = int((following - EPOCH).total_seconds() // 60)
    if _shortened():
        minute += current - current % CYCLE
        if minute <= current:
            minute += CYCLE
    return EPOCH + timedelta(seconds=minute * minute_seconds())
