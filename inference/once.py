"""What may be used only once, whichever process sees it: a webhook's signature within
its time window, an MCP sign-in's ``state``. A unique row in the database records the
first use (the insert that wins); any later use of the same thing, here or in another
process or replica, is a replay. A unit of work for the database threads
(``inference.database``)."""

import hashlib
from datetime import datetime

from django.db import IntegrityError, transaction

from inference.models import UsedOnce


def first_use(kind: str, token: str, expires_at: datetime, now: datetime) -> bool:
    """Whether this is the first use of ``token`` (of ``kind``), recorded as used until
    ``expires_at``; False: it was used before."""
    UsedOnce.objects.filter(expires_at__lt=now).delete()
    digest = hashlib.sha256(token.encode()).hexdigest()
    try:
        with transaction.atomic():
            UsedOnce.objects.create(kind=kind, digest=digest, expires_at=expires_at)
    except IntegrityError:
        return False
    return True
