"""A worker being stopped stops taking work at once, then finishes what it has.

Daphne stops on SIGTERM (or SIGINT) by stopping Twisted's reactor, whose shutdown
cancels every request in flight and only then closes the listening socket: meanwhile
the worker went on accepting connections and answering them while its parts were being
stopped under them (a provider client closed under a request was a 500). Here the signal
begins a drain instead, in this order:

1. the runtime says it is stopping (``/readyz`` answers 503, a new request on a
   connection kept alive is answered 503, ``gateway.middleware``), every response from
   now on says ``Connection: close`` and its connection is closed after it;
2. the listening socket is closed: new connections go to the other workers (and, once
   every worker and the supervisor have closed it, are refused);
3. the requests in flight get ``DRAIN_SECONDS`` to finish; then the reactor stops as
   before: what is left is cancelled (billed and recorded with status 499), background
   work gets its grace, every record is written, and only then are the provider clients
   closed (``inference.engine``).

A second SIGINT (Ctrl-C twice) stops at once. Imported by ``gateway.asgi`` in the daphne
process.
"""

import asyncio
import logging
import signal
from types import FrameType
from typing import Any

from daphne import http_protocol

from core.afterresponse import responses_in_progress
from core.logformat import log_event
from gateway.runtime import Runtime
from gateway.server.forms import UnparsedFormsRequest

# Within the 15 s a worker of ``serve --workers`` gets before SIGKILL: the requests in
# flight, then background work (5 s at most) and the last records.
DRAIN_SECONDS = 7.0
_POLL_SECONDS = 0.02
logger = logging.getLogger("gateway.server")


class ClosingRequest(UnparsedFormsRequest):
    """Daphne's request (its form bodies unparsed): a response begun once the worker is
    stopping says ``Connection: close``, and its connection is closed after it."""

    stopping = False  # the process's, set for every request at once
    closes = False  # this response's connection closes after it

    def handle_reply(self, message: dict[str, Any]) -> None:
        starts = message["type"] == "http.response.start"
        if starts and ClosingRequest.stopping:
            self.closes = True
        super().handle_reply(message)
        if starts and self.closes:
            self.responseHeaders.setRawHeaders(b"connection", [b"close"])

    def finish(self) -> None:
        if self.closes and self.channel is not None:
            self.channel.persistent = False
        super().finish()


http_protocol.WebRequest = ClosingRequest


def follow_signals(reactor: Any, process: Runtime) -> None:
    """Drain on SIGTERM and SIGINT, in place of the reactor's own handlers (installed
    as it starts running, so replaced once it runs)."""
    drain = Drain(reactor, process)

    def received(signum: int, frame: FrameType | None) -> None:
        reactor.callFromThread(drain.begin, signum)

    def install() -> None:
        signal.signal(signal.SIGTERM, received)
        signal.signal(signal.SIGINT, received)

    reactor.callWhenRunning(install)


class Drain:
    def __init__(self, reactor: Any, process: Runtime) -> None:
        self.reactor = reactor
        self.process = process
        self._waiting: asyncio.Task[None] | None = None

    def begin(self, signum: int) -> None:
        if self.process.stopping:
            if signum == signal.SIGINT:
                self.reactor.stop()
            return
        self.process.stopping = ClosingRequest.stopping = True
        closed = self._stop_listening()
        log_event(logger, "stopping", signal=signal.Signals(signum).name, listeners=closed)
        self._waiting = asyncio.ensure_future(self._then_stop())

    def _stop_listening(self) -> int:
        """Close every listening socket of the reactor; how many there were."""
        from twisted.internet import tcp

        readers = self.reactor.getReaders()
        ports: list[Any] = [reader for reader in readers if isinstance(reader, tcp.Port)]
        for port in ports:
            port.stopListening()
        return len(ports)

    async def _then_stop(self) -> None:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + DRAIN_SECONDS
        while responses_in_progress() and loop.time() < deadline:
            await asyncio.sleep(_POLL_SECONDS)
        log_event(logger, "drained", cut=responses_in_progress())
        self.reactor.stop()
