"""Anthropic's Admin API cost report: ``GET {base_url}/v1/organizations/cost_report``
with an admin key in ``x-api-key`` and ``anthropic-version``, daily buckets grouped by
description (which names the ``model``), a page at a time (``next_page`` while
``has_more``). Amounts are decimal strings of cents. ``project`` is a workspace id: the
report is then grouped by workspace too, and only that workspace's results count."""

from datetime import UTC, date, datetime, time, timedelta
from decimal import Decimal
from typing import Any

from agents.schema import BillingConfig
from inference.providers.anthropic_format import API_VERSION
from inference.reconciliation.bills import (
    NO_MODEL,
    BilledLine,
    BillingError,
    BillPage,
    BillRequest,
    micro_usd,
)

PATH = "/v1/organizations/cost_report"
MAX_BUCKETS = 31  # the most the API answers in one page
_CENT = Decimal("0.01")


class AnthropicCostReport:
    def request(
        self, base_url: str, billing: BillingConfig, first: date, last: date, page: str | None
    ) -> BillRequest:
        days = (last - first).days + 1
        params = [
            ("starting_at", _rfc3339(first)),
            ("ending_at", _rfc3339(last + timedelta(days=1))),
            ("bucket_width", "1d"),
            ("group_by[]", "description"),
            ("limit", str(min(days, MAX_BUCKETS))),
        ]
        if billing.project is not None:
            params.append(("group_by[]", "workspace_id"))
        if page is not None:
            params.append(("page", page))
        headers = {"x-api-key": billing.admin_key, "anthropic-version": API_VERSION}
        return BillRequest(f"{base_url}{PATH}", tuple(params), headers)

    def read(self, body: Any, billing: BillingConfig) -> BillPage:
        try:
            lines = [
                _line(bucket["starting_at"], result)
                for bucket in body["data"]
                for result in bucket["results"]
                if billing.project is None or result.get("workspace_id") == billing.project
            ]
            following = body["next_page"] if body.get("has_more") else None
        except (KeyError, TypeError, ValueError, ArithmeticError) as error:
            raise BillingError(
                f"something other than a page of a cost report ({type(error).__name__}: {error})"
            ) from error
        return BillPage(lines, following)


def _line(starting_at: str, result: dict[str, Any]) -> BilledLine:
    currency = str(result.get("currency") or "USD")
    if currency.upper() != "USD":
        raise ValueError(f"an amount in {currency}, not USD")
    day = datetime.fromisoformat(starting_at).astimezone(UTC).date()
    # Costs of no model (web searches, code execution) go by their description.
    model = result.get("model") or result.get("description") or NO_MODEL
    return BilledLine(day, str(model), micro_usd(Decimal(str(result["amount"])) * _CENT))


def _rfc3339(day: date) -> str:
    return datetime.combine(day, time(), UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
