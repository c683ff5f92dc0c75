"""The live traffic publisher does nothing for a finished request while no page watches."""

import asyncio
import uuid

import pytest
from channels.layers import get_channel_layer
from pytest_django.fixtures import Settings

from adminui.records.live import GROUP, Audience, audience, publish
from core.requestlog import RequestLog


def finished_request() -> RequestLog:
    return RequestLog(
        request_id=uuid.uuid4().hex, method="POST", path="/v1/chat/completions", dialect="chat"
    )


async def test_a_request_finishing_while_no_page_watches_starts_nothing() -> None:
    assert audience.here == 0
    before = len(asyncio.all_tasks())

    publish(finished_request())

    assert len(asyncio.all_tasks()) == before


async def test_a_request_finishing_while_a_page_watches_is_sent_to_it() -> None:
    layer = get_channel_layer()
    page = await layer.new_channel()
    await layer.group_add(GROUP, page)
    audience.here += 1
    try:
        log = finished_request()
        publish(log)
        message = await asyncio.wait_for(layer.receive(page), timeout=5)
    finally:
        audience.here -= 1
        await layer.group_discard(GROUP, page)
    assert message["request_id"] == log.request_id


@pytest.mark.redis
async def test_pages_on_other_workers_are_looked_up_in_redis_at_most_once_a_second(
    settings: Settings,
) -> None:
    settings.CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            "CONFIG": {"hosts": ["redis://127.0.0.1:6379/0"], "prefix": uuid.uuid4().hex},
        }
    }
    nobody = Audience()
    assert nobody.known() is None  # unknown: ask Redis
    answers = await asyncio.gather(*(nobody.watching() for _ in range(5)))
    assert answers == [False] * 5
    assert nobody.known() is False  # trusted for a second: no lookup per request

    layer = get_channel_layer()
    await layer.group_add(GROUP, await layer.new_channel())  # a page open on another worker

    assert nobody.known() is False  # still within the second
    assert await Audience().watching() is True
