"""The guardrails' layer of the model-call seam: every call of a conversation whose agent
(or whose caller's key) lists guardrails goes through their checks.

Before the call (``input``, and ``tool_results`` for the results of tools): a block
refuses the call with a 400 ``guardrail_blocked`` (no upstream call is made), a tool
result that fails a check is withheld from the model, a redaction sends placeholders
instead of the values, a warning lets the text through; the loop guard adds a note
asking for another approach when the conversation's tool calls repeat; a judge or a
moderation guardrail asks a model (``inference.guardrails.classifying``). After it
(``output``): the placeholders of the reply become the values again, and a block
replaces the reply with a short refusal ending in ``content_filter`` (a looping tool
call too). A stream is checked on a window of text held back from the client.
"""

from collections import Counter
from collections.abc import AsyncIterator, Iterable
from contextlib import asynccontextmanager
from dataclasses import dataclass, replace

from agents.schema import Config, GuardrailConfig
from inference.guardrails.classifying import Classifying
from inference.guardrails.events import (
    Acted,
    Deferring,
    GuardrailOutcomes,
    Outcome,
    Stage,
    Whose,
    keep,
)
from inference.guardrails.guards import Finder, finder
from inference.guardrails.loops import Loop, find_loop, history_calls
from inference.guardrails.matches import Match, counted
from inference.guardrails.placeholders import Vault
from inference.guardrails.refusals import GuardrailBlocked, Stopped, refused, withheld
from inference.guardrails.streams import GuardedStream
from inference.neutral.calls import CallResult, CallStream, ModelCalls
from inference.neutral.types import (
    Block,
    ChatRequest,
    Message,
    Part,
    ToolCall,
)
from inference.providers.base import ProviderError
from inference.telemetry.names import guardrail_span
from inference.telemetry.spans import Span

_ASKING = ("judge", "moderation")  # the kinds that ask a model
_FLAGGED = {"judge": "flagged by its judge", "moderation": "flagged by moderation"}
_OUTCOMES: dict[str, Outcome] = {"block": "blocked", "redact": "redacted", "warn": "warned"}


def _described(matches: Iterable[Match]) -> str:
    return ", ".join(f"{entity} x{count}" for entity, count in counted(matches).items())


@dataclass
class _Scan:
    """One guardrail's findings over the texts of one stage of a call."""

    guard: GuardrailConfig
    found: Counter[str]

    def acted(self, stage: Stage, outcome: Outcome) -> Acted:
        return Acted(self.guard.name, stage, outcome, {"entities": dict(self.found)})


class GuardedCalls:
    """``names``: the guardrails that apply, the agent's then the key's. ``outcomes``:
    the turn's, for the response's header."""

    def __init__(
        self,
        calls: ModelCalls,
        config: Config,
        names: tuple[str, ...],
        whose: Whose,
        writer: Deferring,
        outcomes: GuardrailOutcomes,
        span: Span,
        classifying: Classifying | None = None,
    ) -> None:
        self.calls = calls
        self.writer = writer
        self.classifying = classifying
        self.whose = whose
        self.outcomes = outcomes
        self.span = span
        self.vault = Vault()  # one conversation's placeholders
        found = [(name, config.guardrail(name)) for name in names]
        guards = [guard for _, guard in found if guard is not None]
        # A key may name a guardrail the config no longer defines: its calls are refused.
        self.missing = [name for name, guard in found if guard is None]
        self.loops = [guard for guard in guards if guard.kind == "loop"]
        self.judges = [guard for guard in guards if guard.kind in _ASKING]
        texts = [guard for guard in guards if guard.kind not in ("loop", *_ASKING)]
        self.inputs = [guard for guard in texts if "input" in guard.on]
        self.tool_results = [guard for guard in texts if "tool_results" in guard.on]
        self.outputs = [guard for guard in texts if "output" in guard.on]

    async def complete(self, request: ChatRequest) -> CallResult:
        sent = await self._inbound(request)
        result = await self.calls.complete(sent)
        reply = result.reply
        acted: list[Acted] = []
        text, stopped = self.checked_output(reply.text, acted, final=True)
        if stopped is None:
            stopped = await self.judged_output(reply.text, acted)
        if stopped is None:
            stopped = self.looping(request, reply.tool_calls, acted)
        self.kept(acted)
        if stopped is not None:
            return replace(result, reply=refused(reply, stopped))
        calls = tuple(self.restored_call(call) for call in reply.tool_calls)
        return replace(
            result, reply=replace(reply, text=self.vault.restore(text), tool_calls=calls)
        )

    @asynccontextmanager
    async def stream(
        self, request: ChatRequest, *, held: bool = False
    ) -> AsyncIterator[CallStream]:
        sent = await self._inbound(request)
        async with self.calls.stream(sent, held=held) as opened:
            guarded = GuardedStream(opened, self, request)
            yield guarded
        guarded.settle(opened.result)

    # Before the call

    async def _inbound(self, request: ChatRequest) -> ChatRequest:
        if self.missing:
            raise ProviderError(
                503,
                f"The API key's guardrail '{self.missing[0]}' is not defined in the config: "
                "its requests are refused until it is (or the key is replaced)",
                code="guardrail_unavailable",
            )
        acted: list[Acted] = []
        try:
            messages = list(request.messages)
            for guard in self.tool_results:
                messages = self._tool_results(guard, messages, acted)
            system = request.system
            for guard in self.inputs:
                system, messages = self._input(guard, system, messages, acted)
            messages = await self._judged_tool_results(messages, acted)
            await self._judged_input(messages, acted)
            for guard in self.loops:
                system = self._loop_note(guard, system, messages, acted)
        finally:
            self.kept(acted)
        return replace(request, system=system, messages=tuple(messages))

    def _tool_results(
        self, guard: GuardrailConfig, messages: list[Message], acted: list[Acted]
    ) -> list[Message]:
        find = finder(guard)
        scan = _Scan(guard, Counter())
        kept: list[Message] = []
        with guardrail_span(self.span, guard.name):
            for message in messages:
                matches = find(message.content) if message.role == "tool" else []
                scan.found.update(match.entity for match in matches)
                if matches and guard.action == "block":
                    message = replace(message, content=withheld(guard.name), parts=())
                elif matches and guard.action == "redact":
                    message = self._redacted(message, find)
                kept.append(message)
        self._ended(scan, "tool_results", acted)
        return kept

    def _input(
        self,
        guard: GuardrailConfig,
        system: str,
        messages: list[Message],
        acted: list[Acted],
    ) -> tuple[str, list[Message]]:
        find = finder(guard)
        scan = _Scan(guard, Counter())
        with guardrail_span(self.span, guard.name) as span:
            system_matches = find(system) if system else []
            scan.found.update(match.entity for match in system_matches)
            found = [
                (message, [m for text in _texts(message) for m in find(text)])
                for message in messages
            ]
            for _, matches in found:
                scan.found.update(match.entity for match in matches)
            if scan.found and guard.action == "block":
                span.fail("guardrail_blocked")
                self._ended(scan, "input", acted)
                raise GuardrailBlocked(
                    guard.name, ", ".join(f"{e} x{n}" for e, n in scan.found.items())
                )
            if scan.found and guard.action == "redact":
                system = self.vault.redact(system, system_matches)
                messages = [
                    self._redacted(message, find) if matches else message
                    for message, matches in found
                ]
        self._ended(scan, "input", acted)
        return system, messages

    def _redacted(self, message: Message, find: Finder) -> Message:
        vault = self.vault
        content = vault.redact(message.content, find(message.content))
        parts = tuple(self._redacted_part(part, find) for part in message.parts)
        calls = tuple(
            replace(call, arguments=vault.redact(call.arguments, find(call.arguments)))
            for call in message.tool_calls
        )
        return replace(message, content=content, parts=parts, tool_calls=calls)

    def _redacted_part(self, part: Part, find: Finder) -> Part:
        if isinstance(part, str):
            return self.vault.redact(part, find(part))
        if isinstance(part, Block):
            text = self.vault.redact(part.text, find(part.text))
            block = {**part.block, "text": text} if "text" in part.block else part.block
            return Block(block, text)
        return part

    async def _judged_tool_results(
        self, messages: list[Message], acted: list[Acted]
    ) -> list[Message]:
        """The tool results since the model last spoke, each judged."""
        judges = [guard for guard in self.judges if "tool_results" in guard.on]
        start = _after_last_assistant(messages)
        fresh = [index for index in range(start, len(messages)) if messages[index].role == "tool"]
        for guard in judges:
            for index in fresh:
                text = messages[index].content
                flagged = await self._flagged(guard, text, "tool_results", acted)
                if flagged and guard.action == "block":
                    messages[index] = replace(
                        messages[index], content=withheld(guard.name), parts=()
                    )
        return messages

    async def _judged_input(self, messages: list[Message], acted: list[Acted]) -> None:
        """What the user said since the model last spoke, judged: a 400 when a blocking
        judge flags it."""
        start = _after_last_assistant(messages)
        said = "\n\n".join(m.content for m in messages[start:] if m.role == "user")
        if not said:
            return
        for guard in self.judges:
            if "input" not in guard.on:
                continue
            flagged = await self._flagged(guard, said, "input", acted)
            if flagged and guard.action == "block":
                raise GuardrailBlocked(guard.name, _FLAGGED[guard.kind])

    async def judged_output(self, text: str, acted: list[Acted]) -> Stopped | None:
        """The reply as the model wrote it (placeholders, never the values), judged."""
        for guard in self.judges:
            if "output" in guard.on and text:
                flagged = await self._flagged(guard, text, "output", acted)
                if flagged and guard.action == "block":
                    return guard.name, _FLAGGED[guard.kind]
        return None

    async def _flagged(
        self, guard: GuardrailConfig, text: str, stage: Stage, acted: list[Acted]
    ) -> bool:
        """Whether ``guard``'s judge flags ``text`` (a judge that cannot answer does not:
        its failure is logged)."""
        if self.classifying is None:
            return False
        ask = self.classifying.judged if guard.kind == "judge" else self.classifying.moderated
        with guardrail_span(self.span, guard.name) as span:
            verdict = await ask(guard, text)
            if verdict is None:
                span.fail("guardrail_judge_failed")
        if verdict is None or not verdict.flagged:
            self.outcomes.note(guard.name, "passed")
            return False
        outcome = _OUTCOMES[guard.action]
        self.outcomes.note(guard.name, outcome)
        detail: dict[str, object] = {"verdict": "flagged"}
        if guard.kind == "moderation":
            detail["categories"] = verdict.reason.split(", ")
        acted.append(Acted(guard.name, stage, outcome, detail))
        return True

    def _loop_note(
        self, guard: GuardrailConfig, system: str, messages: list[Message], acted: list[Acted]
    ) -> str:
        if guard.action != "warn":
            return system
        loop = find_loop(history_calls(messages), guard.max_repeats, guard.window)
        if loop is None:
            self.outcomes.note(guard.name, "passed")
            return system
        acted.append(Acted(guard.name, "input", "warned", _loop_detail(loop)))
        self.outcomes.note(guard.name, "warned")
        note = (
            f"Note from the gateway: the tool call {loop.described} has been made repeatedly "
            "with the same arguments. Do not repeat it; try another approach or explain "
            "what is blocking you."
        )
        return f"{system}\n\n{note}" if system else note

    # After the call

    def checked_output(
        self, text: str, acted: list[Acted], *, final: bool
    ) -> tuple[str, Stopped | None]:
        """``text`` as the output guardrails let it through (new values redacted), or the
        guardrail that stops the reply and why. ``final``: the whole of what they see
        (record what they found)."""
        for guard in self.outputs:
            find = finder(guard)
            with guardrail_span(self.span, guard.name) as span:
                matches = find(text)
                if matches and guard.action == "block":
                    span.fail("guardrail_blocked")
                    scan = _Scan(guard, Counter(match.entity for match in matches))
                    self._ended(scan, "output", acted)
                    return text, (guard.name, _described(matches))
                if matches and guard.action == "redact":
                    text = _masked(text, matches)
            if final:
                self._ended(_Scan(guard, Counter(m.entity for m in matches)), "output", acted)
        return text, None

    def looping(
        self, request: ChatRequest, calls: tuple[ToolCall, ...], acted: list[Acted]
    ) -> Stopped | None:
        for guard in self.loops:
            if guard.action != "block":
                continue
            recent = [*history_calls(request.messages), *calls]
            loop = find_loop(recent, guard.max_repeats, guard.window, among=calls)
            if loop is None:
                self.outcomes.note(guard.name, "passed")
                continue
            acted.append(Acted(guard.name, "output", "blocked", _loop_detail(loop)))
            self.outcomes.note(guard.name, "blocked")
            return guard.name, f"loop_detected: {loop.described}"
        return None

    def restored_call(self, call: ToolCall) -> ToolCall:
        return replace(call, arguments=self.vault.restore(call.arguments))

    def _ended(self, scan: _Scan, stage: Stage, acted: list[Acted]) -> None:
        guard = scan.guard
        if not scan.found:
            self.outcomes.note(guard.name, "passed")
            return
        outcome = _OUTCOMES[guard.action]
        self.outcomes.note(guard.name, outcome)
        acted.append(scan.acted(stage, outcome))

    def kept(self, acted: list[Acted]) -> None:
        keep(self.writer, self.whose, acted)


def _after_last_assistant(messages: list[Message]) -> int:
    """Where what is new since the model last spoke begins."""
    assistants = [index for index, message in enumerate(messages) if message.role == "assistant"]
    return assistants[-1] + 1 if assistants else 0


def _texts(message: Message) -> list[str]:
    """The texts of a message a guardrail reads: its content and its tool calls'
    arguments (its text parts are in its content)."""
    return [message.content, *(call.arguments for call in message.tool_calls)]


def _loop_detail(loop: Loop) -> dict[str, object]:
    return {"reason": "loop_detected", "tool": loop.call.split("(", 1)[0], "times": loop.times}


def _masked(text: str, matches: list[Match]) -> str:
    """New values the reply would show, replaced by their entity's name."""
    pieces: list[str] = []
    at = 0
    for match in matches:
        pieces += [text[at : match.start], f"[{match.entity}]"]
        at = match.end
    pieces.append(text[at:])
    return "".join(pieces)
