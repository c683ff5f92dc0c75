"""What the admin, ``/metrics`` and the ``reconcile`` command read: the stored rows of the
providers that have ``billing``, over the last days, with their drift and whether it is
over ``reconciliation.alert_pct``; the errors of their last fetch; whether a fetch is
under way."""

from dataclasses import dataclass
from datetime import date, datetime

from django.utils import timezone

from agents.schema import Config
from inference.automation.leases import lease_state
from inference.models import BillingFetch, ReconciledSpend
from inference.reconciliation import drift
from inference.reconciliation.bills import billing_providers

LEASE = "reconciliation"  # the lease of a fetch (inference.automation.leases)


@dataclass(frozen=True)
class DriftRow:
    provider: str
    day: date
    model: str
    billed_usd: float
    computed_usd: float
    drift_usd: float
    drift_pct: float | None  # None: nothing was billed
    flagged: bool  # |drift_pct| over alert_pct


@dataclass(frozen=True)
class FetchError:
    provider: str
    error: str


@dataclass(frozen=True)
class Reconciliation:
    providers: list[str]  # those with billing
    rows: list[DriftRow]  # by provider, day (newest first) and model
    errors: list[FetchError]
    fetched_at: datetime | None  # the last fetch of any of the providers
    fetching: bool  # a fetch is under way somewhere


def reconciliation(config: Config, days: int | None = None) -> Reconciliation:
    """The last ``days`` days (default ``reconciliation.days``), today's UTC day included."""
    providers = billing_providers(config)
    if not providers:
        return Reconciliation(providers, [], [], None, False)
    now = timezone.now()
    first, last = drift.window(now.date(), days or config.reconciliation.days)
    stored = ReconciledSpend.objects.filter(
        provider__in=providers, day__gte=first, day__lte=last
    ).order_by("provider", "-day", "model")
    alert = config.reconciliation.alert_pct
    fetches = list(BillingFetch.objects.filter(provider__in=providers).order_by("provider"))
    return Reconciliation(
        providers=providers,
        rows=[_row(spend, alert) for spend in stored],
        errors=[FetchError(fetch.provider, fetch.error) for fetch in fetches if fetch.error],
        fetched_at=max((fetch.fetched_at for fetch in fetches), default=None),
        fetching=lease_state(LEASE, now)[0],
    )


def flagged_rows(config: Config) -> list[DriftRow]:
    """The rows over the alert threshold (the overview's flag)."""
    return [row for row in reconciliation(config).rows if row.flagged]


def drift_ratios(config: Config) -> dict[tuple[str, str], float]:
    """For each provider and model, its drift ratio on the day it drifted the most of the
    days with something billed: over ``alert_pct / 100`` when one of its rows is flagged."""
    ratios: dict[tuple[str, str], float] = {}
    for row in reconciliation(config).rows:
        if row.drift_pct is None:
            continue
        ratio = round(row.drift_pct / 100, 4)
        key = (row.provider, row.model)
        if key not in ratios or abs(ratio) > abs(ratios[key]):
            ratios[key] = ratio
    return ratios


def _row(spend: ReconciledSpend, alert_pct: float) -> DriftRow:
    billed, computed = spend.billed_micro_usd, spend.computed_micro_usd
    pct = drift.drift_pct(billed, computed)
    return DriftRow(
        provider=spend.provider,
        day=spend.day,
        model=spend.model,
        billed_usd=drift.usd(billed),
        computed_usd=drift.usd(computed),
        drift_usd=drift.usd(drift.drift_micro(billed, computed)),
        drift_pct=pct,
        flagged=drift.flagged(pct, alert_pct),
    )
