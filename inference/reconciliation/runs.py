"""A fetch of every billing provider's bill, stored beside the ledger's figures: run by
one process at a time across the deployment (the lease ``records.LEASE``), on demand (the
admin, the ``reconcile`` command) and once a day by whichever process takes the day's
lease first (``Daily``)."""

import asyncio
import logging
import uuid
from collections.abc import Callable
from datetime import date

from django.utils import timezone

from agents.schema import Config
from core.logformat import log_event
from inference.automation.leases import lease_state, release_lease, take_lease
from inference.database import in_database
from inference.reconciliation import drift, store
from inference.reconciliation.bills import billing_providers
from inference.reconciliation.fetching import FETCH_SECONDS, fetch_all
from inference.reconciliation.records import LEASE

logger = logging.getLogger("gateway.reconciliation")
LEASE_SECONDS = 3 * FETCH_SECONDS  # a holder that died lets go of the lease after it
CHECK_SECONDS = 60.0  # how often a process looks whether the day's fetch is done


async def reconcile(config: Config, by: str, days: int | None = None) -> bool:
    """Fetch the last ``days`` days (default ``reconciliation.days``) of every billing
    provider and store them; False when a fetch is under way elsewhere (nothing done).
    ``by``: who asked, for the log."""
    return await _run(config, by, days or config.reconciliation.days, daily=False)


async def _run(config: Config, by: str, days: int, daily: bool) -> bool:
    """One fetch under the lease (``daily``: unless the day's fetch is done already)."""
    holder = uuid.uuid4().hex
    today = timezone.now().date()
    once_on = today if daily else None
    if not await in_database(take_lease, LEASE, holder, timezone.now(), LEASE_SECONDS, once_on):
        return False
    done_on: date | None = None
    try:
        first, last = drift.window(today, days)
        fetched = await fetch_all(config, first, last)
        await in_database(store.record, fetched, first, last, timezone.now())
        done_on = today
        failed = {item.provider: item.error for item in fetched if item.lines is None}
        log_event(
            logger, "reconciliation_fetched", by=by, days=days,
            providers=[item.provider for item in fetched], failed=failed,
        )  # fmt: skip
    finally:
        await in_database(release_lease, LEASE, holder, timezone.now(), done_on)
    return True


class Daily:
    """A process's part in the day's fetch: every ``CHECK_SECONDS``, while the day's is
    not done, it tries to take the lease for the day (one process wins it, once a day)."""

    def __init__(self, config: Callable[[], Config | None]) -> None:
        self.config = config
        self._done_on: date | None = None  # the day this process knows the fetch done

    async def run(self) -> None:
        while True:
            try:
                await self._check()
            except Exception:  # the database was away, say: the next look tries again
                logger.exception("the day's fetch of the bills failed")
            await asyncio.sleep(CHECK_SECONDS)

    async def _check(self) -> None:
        config = self.config()
        today = timezone.now().date()
        if config is None or not billing_providers(config) or self._done_on == today:
            return
        if await _run(config, "daily", config.reconciliation.days, daily=True):
            self._done_on = today
            return
        held, done_on = await in_database(lease_state, LEASE, timezone.now())
        if done_on == today:
            self._done_on = today
            log_event(logger, "reconciliation_daily_done_elsewhere", day=str(today))
        elif held:
            log_event(logger, "reconciliation_daily_under_way_elsewhere", day=str(today))
