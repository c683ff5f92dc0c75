"""The pii kind: Microsoft Presidio's analyzer with its pattern recognizers only.

No language model is loaded (Presidio's no-op NLP engine), and the e-mail recognizer's
domain check reads the public-suffix list bundled with ``tldextract``, never the network.
Presidio (and the spaCy it imports) costs two to three seconds and 90 MB: it is
imported once a config with a pii guardrail is applied (``prepare``, in a worker
thread, so that the first request does not wait for it), never in a process without
one.
"""

import logging
from functools import cache
from typing import TYPE_CHECKING

from agents.schema import Config
from agents.validation import PII_ENTITIES
from inference.guardrails.matches import Match

if TYPE_CHECKING:
    import re2
    from presidio_analyzer import AnalyzerEngine


@cache
def _analyzer() -> "AnalyzerEngine":
    # Its info lines come with every text it reads ("Skipping context extraction ...").
    logging.getLogger("presidio-analyzer").setLevel(logging.WARNING)
    import tldextract
    from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
    from presidio_analyzer.nlp_engine import NoOpNlpEngine
    from presidio_analyzer.predefined_recognizers import (
        CreditCardRecognizer,
        EmailRecognizer,
        IbanRecognizer,
        IpRecognizer,
        PhoneRecognizer,
        UsSsnRecognizer,
    )

    offline = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

    class OfflineEmailRecognizer(EmailRecognizer):
        def validate_result(self, pattern_text: str) -> bool:
            return offline(pattern_text).fqdn != ""

    registry = RecognizerRegistry(
        recognizers=[
            OfflineEmailRecognizer(),
            PhoneRecognizer(),
            CreditCardRecognizer(),
            IbanRecognizer(),
            UsSsnRecognizer(),
            IpRecognizer(),
        ]
    )
    engine = NoOpNlpEngine(models=[{"lang_code": "en", "model_name": "none"}])
    return AnalyzerEngine(registry=registry, nlp_engine=engine, supported_languages=["en"])


def prepare(config: Config) -> None:
    """Load Presidio now when ``config`` has a pii guardrail."""
    if any(guard.kind == "pii" for guard in config.guardrails):
        _analyzer()


# Below this score a recognizer's match is only a shape that context words would confirm
# (a bare number like a phone's); with no language model there is no such context.
MIN_SCORE = 0.3


# What a text must hold for each recognizer to find anything in it, looser than the
# recognizer itself: a text without it skips the recognizer (the phone numbers' matcher
# tries eight regions' formats and costs most of a check).
_HINTS = {
    "EMAIL_ADDRESS": r"@",
    "PHONE_NUMBER": r"\d(?:\D{0,3}\d){5}",
    "CREDIT_CARD": r"\d(?:\D{0,3}\d){11}",
    "IBAN_CODE": r"[A-Za-z]{2}\d{2}",
    "US_SSN": r"\d(?:\D{0,3}\d){8}",
    "IP_ADDRESS": r"\d\.\d|[0-9A-Fa-f]?::?[0-9A-Fa-f]",
}


@cache
def _hint(entity: str) -> "re2._Regexp":
    import re2

    return re2.compile(_HINTS[entity])


def find_pii(text: str, entities: tuple[str, ...] = PII_ENTITIES) -> list[Match]:
    hinted = [entity for entity in entities if _hint(entity).search(text)]
    if not hinted:
        return []
    results = _analyzer().analyze(text, language="en", entities=hinted)
    return [
        Match(result.entity_type, result.start, result.end)
        for result in results
        if result.score >= MIN_SCORE
    ]
