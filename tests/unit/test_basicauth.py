"""``core.auth.basicauth``: remembered credentials and the newest-first slots of the slow hash."""

import asyncio

import pytest
from django.contrib.auth.hashers import check_password, make_password

from core.auth import basicauth
from core.auth.basicauth import BasicVerifier, NewestFirstSlots, basic_credentials


def test_basic_credentials_parse_only_well_formed_headers() -> None:
    assert basic_credentials("Basic YWRtaW46czpl") == ("admin", "s:e")
    assert basic_credentials("basic YWRtaW46") == ("admin", "")
    assert basic_credentials("Bearer YWRtaW46czpl") is None
    assert basic_credentials("Basic bm8tY29sb24=") is None
    assert basic_credentials("Basic !!!") is None
    assert basic_credentials(None) is None


async def test_newest_first_slots_admit_the_latest_waiter_first() -> None:
    slots = NewestFirstSlots(2)
    admitted: list[str] = []
    release = asyncio.Event()

    async def holder(name: str) -> None:
        async with slots:
            admitted.append(name)
            await release.wait()

    async def waiter(name: str) -> None:
        async with slots:
            admitted.append(name)

    holders = [asyncio.create_task(holder(name)) for name in ("a", "b")]
    await asyncio.sleep(0)
    waiters = []
    for name in ("old", "middle", "new"):
        waiters.append(asyncio.create_task(waiter(name)))
        await asyncio.sleep(0)
    assert admitted == ["a", "b"]
    release.set()
    await asyncio.gather(*holders, *waiters)

    assert admitted == ["a", "b", "new", "middle", "old"]


async def test_verifier_remembers_a_correct_hashed_pair_until_the_config_changes(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    slow_checks: list[str] = []
    real_check = check_password  # what core.basicauth calls

    def counted(password: str, encoded: str) -> bool:
        slow_checks.append(password)
        return real_check(password, encoded)

    monkeypatch.setattr(basicauth, "check_password", counted)
    verifier = BasicVerifier()
    stored = ("admin", make_password("right"))

    assert await verifier.verify("admin", "right", stored)
    assert await verifier.verify("admin", "right", stored)
    assert not await verifier.verify("mallory", "right", stored)
    assert not await verifier.verify("admin", stored[1], stored)
    assert await verifier.verify("admin", "right", ("admin", make_password("right")))

    # Once for the first success, once for the wrong user, the hash, and the new config.
    assert slow_checks == ["right", "right", stored[1], "right"]


async def test_a_waiter_cancelled_as_a_slot_frees_leaves_the_slot_free() -> None:
    slots = NewestFirstSlots(1)
    await slots.__aenter__()
    waiting = asyncio.create_task(slots.__aenter__())
    await asyncio.sleep(0)
    waiting.cancel()
    await slots.__aexit__()  # in the same tick: the release finds the waiter cancelled

    with pytest.raises(asyncio.CancelledError):
        await waiting
    await asyncio.wait_for(slots.__aenter__(), timeout=5)
