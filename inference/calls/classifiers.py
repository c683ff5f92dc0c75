"""Asking the classifiers of a turn's guardrails (``inference.guardrails.classifying``)
for its caller: a judge's call is billed to the caller as kind ``guardrail``, to the
agent being guarded, and is not part of the reply's usage; a moderation call (free at
OpenAI) goes through the provider's own client."""

import logging
import uuid
from dataclasses import dataclass

from agents.schema import Config, GuardrailConfig
from core.logformat import log_event
from inference.calls.asking import Billing, ask
from inference.calls.conversation import Borrowed
from inference.guardrails.classifying import (
    Verdict,
    judge_request,
    moderation_verdict,
    verdict_of,
)
from inference.money.caller import Caller
from inference.providers.base import ProviderError
from inference.providers.openai_format import OpenAIFormatProvider
from inference.routing.deployments import route_of

logger = logging.getLogger("gateway.inference")


@dataclass(frozen=True)
class GuardrailClassifiers:
    """The judges and moderation endpoints of one turn's guardrails, asked for
    ``caller`` about ``agent``'s calls."""

    config: Config
    engine: Borrowed
    caller: Caller
    agent: str

    async def judged(self, guard: GuardrailConfig, text: str) -> Verdict | None:
        judge = self.config.agent(guard.agent or "")
        if judge is None:
            return None
        request = judge_request(judge.model, judge.preamble, text)
        billing = Billing(self.agent, f"guardrail-{uuid.uuid4().hex}")
        caller = self.caller.to("guardrail")
        asked = await ask(caller, self.config, self.engine, route_of(judge), request, billing)
        verdict = verdict_of(asked.text) if asked.text is not None else None
        if verdict is None:
            log_event(
                logger,
                "guardrail_judge_failed",
                logging.WARNING,
                guardrail=guard.name,
                judge=judge.name,
                error=asked.error or "the answer was not a verdict",
            )
        return verdict

    async def moderated(self, guard: GuardrailConfig, text: str) -> Verdict | None:
        name = guard.provider or ""
        provider = self.engine.providers.provider(name, self.config)
        if not isinstance(provider, OpenAIFormatProvider):
            return None
        try:
            result = await provider.moderate(text, guard.model)
        except ProviderError as error:
            log_event(
                logger,
                "guardrail_moderation_failed",
                logging.WARNING,
                guardrail=guard.name,
                provider=name,
                error=error.message,
            )
            return None
        return moderation_verdict(guard, result)
