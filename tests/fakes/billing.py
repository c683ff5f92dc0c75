"""What the fakes bill: the costs a test sets on a provider's fake, laid out in daily
buckets a page at a time as both billing APIs lay them out (a bucket for every day of
the range asked, empty ones too; ``limit`` buckets a page; an opaque ``next_page``
token while ``has_more``). Each fake renders the buckets in its own API's shape."""

import base64
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal


@dataclass(frozen=True)
class Cost:
    """Some USD a provider billed for a model's tokens on a UTC day."""

    day: date
    model: str
    usd: Decimal
    tokens: str = "input"  # or "output"
    project: str | None = None  # an OpenAI project's or an Anthropic workspace's id


@dataclass(frozen=True)
class BillPage:
    days: list[tuple[date, list[Cost]]]  # each bucket's day and its costs
    next_page: str | None


def bill_page(
    costs: Iterable[Cost], start: datetime, end: datetime | None, limit: int, page: str | None
) -> BillPage:
    """The buckets of the days from ``start`` to ``end`` (exclusive; None: today's
    included) from the page ``page``, ``limit`` of them."""
    first = start.astimezone(UTC).date()
    if page is not None:
        first = date.fromisoformat(base64.urlsafe_b64decode(page.removeprefix("page_")).decode())
    stop = (
        end.astimezone(UTC).date() if end is not None else datetime.now(UTC).date() + timedelta(1)
    )
    days = [first + timedelta(n) for n in range(max(0, (stop - first).days))]
    listed = list(costs)
    shown = days[:limit]
    following = None
    if len(days) > limit:
        following = "page_" + base64.urlsafe_b64encode(days[limit].isoformat().encode()).decode()
    return BillPage(
        [(day, [cost for cost in listed if cost.day == day]) for day in shown], following
    )


def day_start(day: date) -> datetime:
    return datetime(day.year, day.month, day.day, tzinfo=UTC)
