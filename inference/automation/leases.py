"""What decides, across every process and replica sharing the database, that one of
them does a thing once: a trigger's run for a slot (a unique row: the first insert wins,
the others hit the constraint), the deployment's start (one row, renewed by every
process's heartbeat), and work one process at a time does, at most once a day if it
says so (a named row: the one conditional update that matches it wins). Plain ORM on
SQLite and PostgreSQL alike."""

from datetime import date, datetime, timedelta

from django.db import IntegrityError, transaction
from django.db.models import Q

from agents.schema import TriggerConfig
from inference.models import Deployment, Lease, SmokeRun, TriggerRun

# What a run left unfinished when every process stopped says.
STOPPED = "the gateway stopped before the run ended"


def claim_run(trigger: TriggerConfig, slot: str | None, now: datetime) -> int | None:
    """A new run of ``trigger`` for ``slot`` (None: a webhook's, never taken), or None
    when another process has taken the slot."""
    try:
        with transaction.atomic():
            run = TriggerRun.objects.create(
                trigger=trigger.name,
                slot=slot,
                kind=trigger.kind,
                agent=trigger.agent,
                user_id=trigger.user,
                created_at=now,
            )
    except IntegrityError:
        return None
    return run.id


def join_deployment(now: datetime, lease: float) -> datetime:
    """The deployment's start (its epoch): a new one when no process's heartbeat vouches
    for a live deployment (they all stopped more than ``lease`` seconds ago), else the
    one this process joins. A new start fails the trigger and smoke-test runs the last
    one left queued or running: no process is left to end them."""
    Deployment.objects.get_or_create(
        id=1, defaults={"epoch": now, "alive_until": now - timedelta(seconds=1)}
    )
    with transaction.atomic():
        row = Deployment.objects.select_for_update().get(id=1)
        if row.alive_until < now:
            row.epoch = now
            for unfinished in (TriggerRun, SmokeRun):
                unfinished.objects.filter(
                    status__in=("queued", "running"), created_at__lt=now
                ).update(status="failed", error=STOPPED, finished_at=now)
        row.alive_until = max(row.alive_until, now + timedelta(seconds=lease))
        row.save()
        return row.epoch


def heartbeat(now: datetime, lease: float) -> None:
    """This process is alive: the deployment is, for ``lease`` seconds more."""
    Deployment.objects.filter(id=1, alive_until__lt=now + timedelta(seconds=lease)).update(
        alive_until=now + timedelta(seconds=lease)
    )


def take_lease(
    name: str, holder: str, now: datetime, seconds: float, once_on: date | None = None
) -> bool:
    """Whether ``holder`` now holds the lease ``name`` for ``seconds``: its last holder
    released it or let it run out, and, with ``once_on``, the work it guards was not done
    that day yet."""
    Lease.objects.get_or_create(name=name, defaults={"until": now - timedelta(seconds=1)})
    free = Lease.objects.filter(name=name, until__lt=now)
    if once_on is not None:
        free = free.filter(Q(done_on__isnull=True) | Q(done_on__lt=once_on))
    return free.update(holder=holder, until=now + timedelta(seconds=seconds)) == 1


def release_lease(name: str, holder: str, now: datetime, done_on: date | None = None) -> None:
    """``holder`` is done with the lease (``done_on``: the work was done that day)."""
    fields: dict[str, object] = {"until": now}
    if done_on is not None:
        fields["done_on"] = done_on
    Lease.objects.filter(name=name, holder=holder).update(**fields)


def lease_state(name: str, now: datetime) -> tuple[bool, date | None]:
    """(whether someone holds the lease ``name`` now, the last day its work was done)."""
    lease = Lease.objects.filter(name=name).first()
    if lease is None:
        return False, None
    return lease.until >= now, lease.done_on
