"""The order in which modules are handed to the workers (``scripts/test`` runs pytest-xdist
with ``--dist loadscope --no-loadscope-reorder``): the modules holding ``slow`` journeys
first, then the others by their number of tests, largest first (xdist's own order).

xdist hands a worker its next module when it is done with the last, so a long module
handed out at the end runs on alone while the other worker idles: the long ones go out
first and the short ones fill in at the end. Within a module, the tests keep their order.
"""

from collections import Counter

import pytest


def module_of(item: pytest.Item) -> str:
    return item.nodeid.split("::", 1)[0]


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    tests = Counter(module_of(item) for item in items)
    slow = {module_of(item) for item in items if item.get_closest_marker("slow")}
    items.sort(key=lambda item: (module_of(item) not in slow, -tests[module_of(item)]))
