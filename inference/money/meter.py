"""What one piece of work spends, call by call, for its caller (a turn with its subagent
levels; a judge's verdict; a smoke run's side of a conversation).

Each model call is admitted before it is made (``admit``: for a limited caller, in the
database, against every call in flight on its user and key; see
``inference.money.admission``), and accounted when it ends (``done``): what it spent, or,
cut short (the client went away), what it had spent so far or its estimate, as the
upstream bills the gateway for it. ``billed`` is what the work's ledger row says, and
``reservations`` the rows that row replaces.

``MeteredCalls`` is the layer of the model-call seam that does this for every call of a
conversation.
"""

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from itertools import count

from django.utils import timezone

from inference.database import in_database
from inference.money.admission import admit, estimated_usage
from inference.money.caller import Caller
from inference.money.prices import Price, priced
from inference.neutral.calls import CallResult, CallStream, ModelCalls
from inference.neutral.errors import ApiError
from inference.neutral.tokens import estimate_tokens
from inference.neutral.types import ChatRequest, Usage
from inference.providers.base import ProviderError, TurnStopped


@dataclass(frozen=True)
class Ticket:
    """One admitted call: its number in the work, and the reservation that holds it
    (None: nothing limits the caller)."""

    number: int
    reservation: int | None


class Meter:
    """``first``: the reservation the request made when it was admitted (it holds the
    work's first call)."""

    def __init__(self, caller: Caller, first: int | None = None) -> None:
        self.caller = caller
        self.spent = Usage()  # by every call that ended
        self._first = first
        self._held: list[int] = [first] if first is not None else []
        self._finished: list[tuple[int, Usage]] = []  # ended, reservation still estimated
        self._under_way: dict[int, Callable[[], Usage]] = {}
        self._numbers = count()

    @property
    def reservations(self) -> tuple[int, ...]:
        """Every reservation of the work: its ledger row replaces them."""
        return tuple(self._held)

    def billed(self) -> Usage:
        """What the work is billed: its calls that ended, and those still under way (cut
        when the work was abandoned) at their estimate."""
        return sum((estimate() for estimate in self._under_way.values()), self.spent)

    async def admit(self, estimate: Callable[[], Usage]) -> Ticket:
        """Before a call (429 when the caller may not make it): ``estimate()`` is what it
        may spend, until it ends."""
        reservation = self._first
        if reservation is not None:
            self._first = None  # the request's own admission stands for this call
        elif self.caller.limited or self.caller.rechecks_key:
            finished, self._finished = self._finished, []
            try:
                reservation = await in_database(
                    admit,
                    self.caller,
                    estimate(),
                    timezone.now(),
                    request=False,
                    finished=finished,
                )
            except BaseException as refusal:
                self._finished = finished + self._finished  # not updated: still to do
                if isinstance(refusal, ApiError):
                    raise _stopping(refusal) from refusal
                raise
            if reservation is not None:
                self._held.append(reservation)
        ticket = Ticket(next(self._numbers), reservation)
        self._under_way[ticket.number] = estimate
        return ticket

    def done(self, ticket: Ticket, spent: Usage) -> None:
        """The call ended, having spent ``spent``."""
        self._under_way.pop(ticket.number, None)
        self.spent += spent
        if ticket.reservation is not None:
            self._finished.append((ticket.reservation, spent))

    def cut(self, ticket: Ticket, spent: Usage | None = None) -> None:
        """The call was cut short: billed what it had spent (``spent``) or its estimate."""
        estimate = self._under_way.get(ticket.number)
        if spent is None or not spent.total_tokens:
            spent = estimate() if estimate is not None else Usage()
        self.done(ticket, spent)


class MeteredCalls:
    """Every call of one conversation admitted and accounted by the work's meter; its
    estimate priced at ``price`` (the route's first deployment's)."""

    def __init__(self, calls: ModelCalls, meter: Meter, price: Price | None) -> None:
        self.calls = calls
        self.meter = meter
        self.price = price

    async def complete(self, request: ChatRequest) -> CallResult:
        ticket = await self.meter.admit(lambda: self._estimate(request))
        try:
            result = await self.calls.complete(request)
        except ProviderError as error:
            self.meter.done(ticket, error.usage)
            raise
        except BaseException:
            self.meter.cut(ticket)
            raise
        self.meter.done(ticket, result.usage)
        return result

    @asynccontextmanager
    async def stream(
        self, request: ChatRequest, *, held: bool = False
    ) -> AsyncIterator[CallStream]:
        ticket = await self.meter.admit(lambda: self._estimate(request))
        opened: CallStream | None = None
        try:
            async with self.calls.stream(request, held=held) as opened:
                yield opened
        except ProviderError as error:
            self.meter.done(ticket, opened.so_far() if opened is not None else error.usage)
            raise
        except BaseException:
            self.meter.cut(ticket, opened.so_far() if opened is not None else None)
            raise
        result = opened.result
        if result is None:  # left before its end
            self.meter.cut(ticket, opened.so_far())
        else:
            self.meter.done(ticket, result.usage)

    def _estimate(self, request: ChatRequest) -> Usage:
        """The whole call not yet come: its prompt and the most its reply may spend."""
        prompt = request.system + "".join(message.content for message in request.messages)
        usage = estimated_usage(estimate_tokens(prompt), request.sampling.max_tokens)
        return priced(usage, self.price)


def _stopping(refusal: ApiError) -> TurnStopped:
    """A call the caller's limits refused ends its whole turn, whatever level made it."""
    retry = refusal.headers.get("Retry-After")
    return TurnStopped(
        refusal.status,
        refusal.message,
        code=refusal.code or "rate_limit_exceeded",
        retry_after=int(retry) if retry is not None else None,
        error_type=refusal.error_type,
        final=refusal.final,
    )
