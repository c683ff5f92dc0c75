"""One conversation with a model, from the request to its final answer.

Each round is one model call, made through the conversation's ``ModelCalls`` (the seam
before the upstream: routing sends it and tries again where it failed, the layers
around it cache, trace, record and admit it). A round whose tool calls are all the
agent's own is run by the gateway and the loop goes on (at most ``max_rounds`` such
rounds: the agent's ``max_turns``, else ``MAX_TOOL_ROUNDS``); a round that calls any client tool ends the turn, after the gateway ran its own
calls of that round (they are kept in ``exchange`` for the client's follow-up); a final
text answer is validated against ``response_format`` and sent back for repair while it
does not match. Every call of the turn, at every level, runs only until the turn's
deadline (``inference.tools.bounds``).

Streaming: the client sees only the final answer (or the client-tool calls). When the
agent has tools of its own, each round is collected before it is known to be the last
(``held``); without them the first round is the last and is relayed as it arrives
(``relayed``: the turn reads the call's events itself, so they pass no layer of the
loop's own).
"""

import asyncio
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace
from typing import Any

from inference.neutral.calls import CallResult, CallStream, ModelCalls
from inference.neutral.types import (
    ChatRequest,
    ChatResponse,
    Message,
    Reasoning,
    ResponseFormat,
    StreamEvent,
    TextDelta,
    ToolCall,
    ToolCallDelta,
    Usage,
)
from inference.providers.base import ProviderError
from inference.structured.repair import strip_fence, validation_errors, with_repair_turn
from inference.tools.bounds import CallAllowance
from inference.tools.toolbox import Toolbox

MAX_TOOL_ROUNDS = 8

RunTool = Callable[[ToolCall], Awaitable[Message]]


@dataclass(frozen=True)
class Exchange:
    """What the client cannot carry back of a round that ended at client calls: the
    gateway's own calls of that round with their results, the reasoning the provider
    needs back with the round (Anthropic's signed thinking), and the provider's
    signatures of the client's calls (Gemini refuses a follow-up whose calls lost theirs)."""

    calls: tuple[ToolCall, ...] = ()
    results: tuple[Message, ...] = ()
    reasoning: tuple[Any, ...] = ()
    signatures: tuple[tuple[str, str], ...] = ()  # (client call id, signature)


def exchange_of(
    own: list[ToolCall],
    results: tuple[Message, ...],
    client: list[ToolCall],
    reasoning: tuple[Any, ...],
) -> Exchange | None:
    """The exchange to keep for a round that ended at ``client`` calls (None: nothing)."""
    signatures = tuple((call.id, call.signature) for call in client if call.signature)
    if not (own or reasoning or signatures):
        return None
    return Exchange(tuple(own), results, reasoning, signatures)


class ToolLoop:
    """What its holder reads of it: ``answer`` (once there is one), ``exchange`` (the
    gateway's half of a round that ended at client calls) and ``last`` (the latest model
    call's result: who answered it, in how many attempts, what the cache did). What the
    conversation spent is its work's (``inference.money.meter``)."""

    def __init__(
        self,
        calls: ModelCalls,
        toolbox: Toolbox,
        run_tool: RunTool | None = None,
        response_format: ResponseFormat | None = None,
        max_repairs: int = 0,
        *,
        allowance: CallAllowance,
        max_rounds: int = MAX_TOOL_ROUNDS,
    ) -> None:
        self.calls = calls
        self.max_rounds = max_rounds
        self.allowance = allowance
        self.toolbox = toolbox
        self.run_tool = run_tool
        self.response_format = response_format
        self.max_repairs = max_repairs
        self.answer: ChatResponse | None = None
        self.exchange: Exchange | None = None
        self.last: CallResult | None = None
        self.spent = Usage()  # by this conversation's own calls (not its subagents')
        self._rounds = 0
        self._repairs = 0

    async def complete(self, request: ChatRequest) -> ChatResponse:
        while True:
            try:
                async with asyncio.timeout_at(self.allowance.deadline):
                    result = await self.calls.complete(request)
            except TimeoutError:
                raise self.allowance.timed_out() from None
            self._note(result)
            step = await self._after(request, result.reply)
            if isinstance(step, ChatResponse):
                self.answer = step
                return step
            request = step

    @property
    def relays(self) -> bool:
        """Whether a stream's only round is relayed as it arrives (``relayed``): no
        response format to validate it against and no tools of the agent's own;
        otherwise the final answer comes whole (``held``)."""
        return self.response_format is None and not self.toolbox.agent_tools

    async def held(self, request: ChatRequest) -> ChatResponse:
        """The final answer, once validated or once the agent's own tool rounds are done."""
        if self.response_format is not None:
            return await self.complete(request)  # validated before anything is sent
        while True:
            reply = await self._collected(request)
            step = await self._after(request, reply)
            if isinstance(step, ChatResponse):
                self.answer = step
                return step
            request = step

    @asynccontextmanager
    async def relayed(self, request: ChatRequest) -> AsyncIterator[CallStream]:
        """The only round, open: its events go to the client as they arrive (through
        ``shown``); ``answer`` is set once it ended. One call, no tools: bounded by the
        provider's own timeout, not the turn's deadline."""
        async with self.calls.stream(request) as call:
            yield call
        result = call.result
        assert result is not None, "a stream that ended has its result"
        self._note(result)
        reply = result.reply
        if reply.tool_calls:
            self.exchange = exchange_of([], (), list(reply.tool_calls), reply.reasoning)
        calls = tuple(self.toolbox.to_client(call) for call in reply.tool_calls)
        self.answer = replace(reply, tool_calls=calls)

    def shown(self, batch: list[StreamEvent]) -> list[StreamEvent]:
        """What the client sees of a relayed round's events: its text, reasoning and tool
        calls (named as the client knows its tools)."""
        client_names = self.toolbox.client_names
        shown: list[StreamEvent] = []
        for event in batch:
            if (isinstance(event, TextDelta) and event.text) or isinstance(event, Reasoning):
                shown.append(event)
            elif isinstance(event, ToolCallDelta):
                shown.append(replace(event, name=client_names.get(event.name or "", event.name)))
        return shown

    async def _collected(self, request: ChatRequest) -> ChatResponse:
        try:
            async with asyncio.timeout_at(self.allowance.deadline):
                async with self.calls.stream(request, held=True) as call:
                    async for _ in call.events:
                        pass
        except TimeoutError:
            raise self.allowance.timed_out() from None
        result = call.result
        assert result is not None, "a stream that ended has its result"
        self._note(result)
        return result.reply

    def _note(self, result: CallResult) -> None:
        self.last = result
        self.spent += result.usage

    async def _after(self, request: ChatRequest, reply: ChatResponse) -> ChatResponse | ChatRequest:
        """The turn's answer, or the request of the next round."""
        if reply.tool_calls:
            return await self._tool_round(request, reply)
        if self.response_format is None:
            return reply
        text = strip_fence(reply.text)
        errors = validation_errors(text, self.response_format)
        if not errors:
            return replace(reply, text=text)
        if self._repairs >= self.max_repairs:
            raise ProviderError(
                502,
                f"The model's reply did not match response_format after {self.max_repairs} "
                f"repair attempt(s): {'; '.join(errors)}",
                code="structured_output_invalid",
                final=True,
            )
        self._repairs += 1
        return with_repair_turn(request, reply.text, errors)

    async def _tool_round(
        self, request: ChatRequest, reply: ChatResponse
    ) -> ChatResponse | ChatRequest:
        self._rounds += 1
        if self._rounds > self.max_rounds:
            raise ProviderError(
                502,
                f"The agent made tool calls in {self._rounds} rounds without a final answer "
                f"(the tool loop is limited to {self.max_rounds} rounds)",
                code="tool_loop_limit",
            )
        own = [call for call in reply.tool_calls if call.name not in self.toolbox.client_names]
        client = [call for call in reply.tool_calls if call.name in self.toolbox.client_names]
        results = tuple(await asyncio.gather(*(self._run(call) for call in own)))
        if client:
            self.exchange = exchange_of(own, results, client, reply.reasoning)
            calls = tuple(self.toolbox.to_client(call) for call in client)
            return replace(reply, finish_reason="tool_calls", tool_calls=calls)
        # The client's tool_choice applies to the first round; later rounds choose freely.
        choice = request.tool_choice
        if choice is not None and choice.mode == "required":
            choice = None
        assistant = Message(
            role="assistant",
            content=reply.text,
            tool_calls=reply.tool_calls,
            reasoning=reply.reasoning,
        )
        return replace(
            request, messages=(*request.messages, assistant, *results), tool_choice=choice
        )

    async def _run(self, call: ToolCall) -> Message:
        if call.name not in self.toolbox.agent_tools or self.run_tool is None:
            text = f"Error: there is no tool named '{call.name}'."
            return Message(role="tool", content=text, tool_call_id=call.id, name=call.name)
        return await self.run_tool(call)
