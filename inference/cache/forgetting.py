"""Entries forgotten on purpose: an operator's purge (``DELETE /admin/cache``), or the
entry behind a reply a judge scored below the agent's ``min_score``. This process
forgets them at once; the others within ``recent.FRESH_SECONDS``."""

from inference.cache.recent import RECENT
from inference.cache.store import forget, purge
from inference.database import in_database


def purge_entries(agent: str | None, user_id: str | None) -> int:
    """Forget the entries of ``agent`` and of ``user_id`` (None: any); how many."""
    RECENT.drop(agent=agent, user_id=user_id)
    return purge(agent, user_id)


async def forget_entry(key: str) -> None:
    RECENT.drop(key)
    await in_database(forget, key)
