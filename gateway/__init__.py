"""The gateway's Django project. Every process of it imports this package first (the
server through ``gateway.asgi``, ``manage.py`` through ``gateway.settings``).

httpx imports its command line (rich and pygments: about 3 MB of every process) whenever
they are installed, and Presidio's dependencies (spaCy's typer) install them; the gateway
never runs it. Python's import system refuses a module whose ``sys.modules``
entry is None, and httpx then defines a stand-in ``httpx.main`` instead.
"""

import sys

sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]  # None: refused
