"""A guarded call's stream (``inference.guardrails.calls``): its text restored as it comes,
through a window held back for the output guardrails, its tool calls held until the
loop guard has seen them."""

from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Protocol

from agents.schema import GuardrailConfig
from inference.guardrails.events import Acted
from inference.guardrails.placeholders import Restorer, Vault
from inference.guardrails.refusals import Stopped, refusal, refused
from inference.neutral.calls import CallResult, CallStream
from inference.neutral.types import (
    ChatRequest,
    StreamAccumulator,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)


class Checks(Protocol):
    """What a stream asks of its call's guardrails (``GuardedCalls``)."""

    vault: Vault
    outputs: list[GuardrailConfig]
    loops: list[GuardrailConfig]

    def checked_output(
        self, text: str, acted: list[Acted], *, final: bool
    ) -> tuple[str, Stopped | None]: ...

    async def judged_output(self, text: str, acted: list[Acted]) -> Stopped | None: ...

    def looping(
        self, request: ChatRequest, calls: tuple[ToolCall, ...], acted: list[Acted]
    ) -> Stopped | None: ...

    def restored_call(self, call: ToolCall) -> ToolCall: ...

    def kept(self, acted: list[Acted]) -> None: ...


class GuardedStream:
    """A guarded call's stream: its text restored as it comes (through a window held back
    for the output guardrails, when there are any), its tool calls held until the loop
    guard has seen them (when there is one). Its result is the call's, once it ended
    (``settle``), with the reply as the client was shown it."""

    def __init__(self, opened: CallStream, layer: Checks, request: ChatRequest) -> None:
        self.opened = opened
        self.layer = layer
        self.request = request
        self.answered_by = opened.answered_by
        self.tries = opened.tries
        self.cache = opened.cache
        self.result: CallResult | None = None
        self.events: AsyncIterator[list[StreamEvent]] = self._events()
        self._shown: str | None = None  # the text the client got, once the events ended
        self._stopped: Stopped | None = None

    def so_far(self) -> Usage:
        return self.opened.so_far()

    def settle(self, result: CallResult | None) -> None:
        """The call ended with ``result``: the guarded stream's own, unless it was cut."""
        if result is None or self._shown is None:
            return
        reply = result.reply
        if self._stopped is not None:
            ended = replace(refused(reply, self._stopped), text=self._shown)
            self.result = replace(result, reply=ended)
            return
        calls = tuple(self.layer.restored_call(call) for call in reply.tool_calls)
        self.result = replace(result, reply=replace(reply, text=self._shown, tool_calls=calls))

    async def _events(self) -> AsyncIterator[list[StreamEvent]]:
        layer = self.layer
        window = max((guard.stream_window for guard in layer.outputs), default=0)
        holds_calls = bool(layer.loops)
        restorer = Restorer(layer.vault)
        call_restorers: dict[int, Restorer] = {}
        held_calls: list[ToolCallDelta] = []
        seen = StreamAccumulator()  # the reply as the model wrote it
        shown: list[str] = []
        pending = ""
        acted: list[Acted] = []
        stopped: Stopped | None = None
        async for batch in self.opened.events:
            passed: list[StreamEvent] = []
            for event in batch:
                seen.add(event)
                if stopped is not None:
                    continue  # the rest is read for what it spent, never shown
                if isinstance(event, TextDelta):
                    if not window:
                        text = restorer.feed(event.text)
                        if text:
                            shown.append(text)
                            passed.append(replace(event, text=text))
                        continue
                    pending += event.text
                    if len(pending) < 2 * window:
                        continue
                    pending, stopped = layer.checked_output(pending, acted, final=False)
                    if stopped is None:
                        released, pending = pending[:-window], pending[-window:]
                        if text := restorer.feed(released):
                            shown.append(text)
                            passed.append(TextDelta(text))
                elif isinstance(event, ToolCallDelta):
                    if holds_calls:
                        held_calls.append(event)
                        continue
                    arguments = call_restorers.setdefault(event.index, Restorer(layer.vault))
                    passed.append(replace(event, arguments=arguments.feed(event.arguments)))
                else:
                    passed.append(event)
            if passed:
                yield passed
        reply = seen.response()
        if stopped is None and layer.outputs:
            pending, stopped = layer.checked_output(pending, acted, final=False)
            if stopped is None:  # what the windows saw in pieces, seen whole
                _, stopped = layer.checked_output(reply.text, acted, final=True)
        if stopped is None:
            stopped = await layer.judged_output(reply.text, acted)
        if stopped is None:
            stopped = layer.looping(self.request, reply.tool_calls, acted)
        layer.kept(acted)
        if stopped is not None:
            text = refusal(*stopped)
            ending = f"\n\n{text}" if shown else text
            yield [TextDelta(ending)]
            self._shown, self._stopped = "".join(shown) + ending, stopped
            return
        rest: list[StreamEvent] = []
        if text := restorer.feed(pending) + restorer.flush():
            shown.append(text)
            rest.append(TextDelta(text))
        rest += [
            replace(delta, arguments=layer.vault.restore(delta.arguments)) for delta in held_calls
        ]
        for index, arguments in call_restorers.items():
            if tail := arguments.flush():
                rest.append(ToolCallDelta(index, arguments=tail))
        self._shown = "".join(shown)
        if rest:
            yield rest
