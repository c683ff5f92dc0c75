"""OpenAI's organization Costs API: ``GET {base_url}/organization/costs`` with an admin
key as the bearer token, daily buckets (``bucket_width=1d``) grouped by line item
(``"<model>, input"``), of one project when ``project`` is set (``project_ids``), a page
at a time (``next_page`` while ``has_more``). Amounts are USD numbers."""

from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from agents.schema import BillingConfig
from inference.reconciliation.bills import (
    BilledLine,
    BillingError,
    BillPage,
    BillRequest,
    micro_usd,
    model_of_line_item,
)

PATH = "/organization/costs"
MAX_BUCKETS = 180  # the most the API answers in one page


class OpenAICosts:
    def request(
        self, base_url: str, billing: BillingConfig, first: date, last: date, page: str | None
    ) -> BillRequest:
        days = (last - first).days + 1
        params = [
            ("start_time", str(_seconds(first))),
            ("end_time", str(_seconds(last + timedelta(days=1)))),
            ("bucket_width", "1d"),
            ("group_by", "line_item"),
            ("limit", str(min(days, MAX_BUCKETS))),
        ]
        if billing.project is not None:
            params.append(("project_ids", billing.project))
        if page is not None:
            params.append(("page", page))
        headers = {"Authorization": f"Bearer {billing.admin_key}"}
        return BillRequest(f"{base_url}{PATH}", tuple(params), headers)

    def read(self, body: Any, billing: BillingConfig) -> BillPage:
        try:
            lines = [
                _line(bucket["start_time"], result)
                for bucket in body["data"]
                for result in bucket["results"]
            ]
            following = body["next_page"] if body.get("has_more") else None
        except (KeyError, TypeError, ValueError, ArithmeticError) as error:
            raise BillingError(
                f"something other than a page of costs ({type(error).__name__}: {error})"
            ) from error
        return BillPage(lines, following)


def _line(start_time: int, result: dict[str, Any]) -> BilledLine:
    amount = result["amount"]
    currency = str(amount.get("currency", "usd"))
    if currency.lower() != "usd":
        raise ValueError(f"an amount in {currency}, not USD")
    day = datetime.fromtimestamp(int(start_time), UTC).date()
    model = model_of_line_item(result.get("line_item"))
    return BilledLine(day, model, micro_usd(Decimal(str(amount["value"]))))


def _seconds(day: date) -> int:
    return int(datetime.combine(day, time(), UTC).timestamp())
