"""What a fetch leaves in the database: for each provider whose billing API answered, its
rows of the days fetched (what it billed and what the ledger computed, per day and model)
replace the ones before; for every provider, when it was fetched and how that went."""

from collections import defaultdict
from collections.abc import Sequence
from datetime import UTC, date, datetime, time, timedelta

from django.db import transaction
from django.db.models import Sum
from django.db.models.functions import TruncDate

from inference.models import BillingFetch, LedgerEntry, ReconciledSpend
from inference.reconciliation.fetching import Fetched

type SpendKey = tuple[str, date, str]  # provider, UTC day, model


def record(fetched: Sequence[Fetched], first: date, last: date, now: datetime) -> None:
    answered = {item.provider: item.lines for item in fetched if item.lines is not None}
    computed = computed_spend(list(answered), first, last)
    billed: dict[SpendKey, int] = defaultdict(int)
    for provider, lines in answered.items():
        for line in lines:
            if first <= line.day <= last:
                billed[provider, line.day, line.model] += line.micro_usd
    rows = [
        ReconciledSpend(
            provider=provider,
            day=day,
            model=model,
            billed_micro_usd=billed.get((provider, day, model), 0),
            computed_micro_usd=computed.get((provider, day, model), 0),
            fetched_at=now,
        )
        for provider, day, model in sorted(billed.keys() | computed.keys())
    ]
    with transaction.atomic():
        ReconciledSpend.objects.filter(
            provider__in=list(answered), day__gte=first, day__lte=last
        ).delete()
        ReconciledSpend.objects.bulk_create(rows)
        for item in fetched:
            BillingFetch.objects.update_or_create(
                provider=item.provider, defaults={"fetched_at": now, "error": item.error}
            )


def computed_spend(providers: list[str], first: date, last: date) -> dict[SpendKey, int]:
    """What the ledger computed for the calls of ``providers`` (every kind of charge), per
    UTC day and model, in micro-USD (calls without a known price count nothing)."""
    if not providers:
        return {}
    start = datetime.combine(first, time(), UTC)
    end = datetime.combine(last + timedelta(days=1), time(), UTC)
    rows = (
        LedgerEntry.objects.filter(
            provider__in=providers, created_at__gte=start, created_at__lt=end
        )
        .annotate(day=TruncDate("created_at", tzinfo=UTC))
        .values("provider", "day", "model")
        .annotate(cost=Sum("cost_micro_usd"))
    )
    return {(row["provider"], row["day"], row["model"]): row["cost"] or 0 for row in rows}
