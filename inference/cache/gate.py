"""The gate after a semantic lookup's similarity (docs/caching.md, "The gate"): an
embedding puts a question close to its negation and to itself with the roles swapped,
so a candidate above the threshold is served only when the two last user messages agree
on what an embedding blurs. Compared after lower-casing and dropping punctuation:

- negation words, as a multiset (``n't`` and ``cannot`` count as ``not``);
- numbers (with sign, currency and percent), as a sequence;
- quoted strings, as a sequence;
- names and identifiers, as a multiset: a word capitalised anywhere but at the start of
  a sentence (in either message), or holding a digit, ``_``, ``@``, ``.`` or ``/``;
- the content words both share (not articles, auxiliaries, pronouns, prepositions,
  conjunctions, question or politeness words), in the same relative order, or (three
  or more of them) with a block moved from the front to the back: a question may begin
  with its circumstances ("On Friday, …"), but a swap of roles is no such move.

Anything else (case, punctuation, a politeness word, another ordinary word) is left to
the similarity: antonyms such as increase and decrease pass (the judge-based
``min_score`` is for those). Pure functions, no Django.
"""

import re
from collections import Counter
from dataclasses import dataclass
from decimal import Decimal, InvalidOperation
from typing import Literal

type Rule = Literal["negation", "numbers", "quotes", "names", "order"]


def _words(*lines: str) -> frozenset[str]:
    return frozenset(" ".join(lines).split())


# English as the design names it, then the common ones of French, German, Spanish,
# Italian, Portuguese and Dutch: one list, as the gateway does not detect languages.
NEGATIONS = _words(
    "not no never without none nobody nothing neither nor nowhere cannot",
    "dont doesnt didnt isnt arent wasnt werent cant couldnt shouldnt wouldnt wont",
    "hasnt havent hadnt aint mustnt neednt",
    "ne pas jamais rien aucun aucune sans ni",
    "nicht kein keine keinen keinem keiner keines nie niemals nichts niemand ohne weder",
    "nunca nada nadie ninguno ninguna sin tampoco",
    "non mai niente nulla nessuno nessuna senza",
    "não nenhum nenhuma ninguém sem",
    "niet geen nooit niets zonder",
)
# Words that carry no role in a question: their order is left to the similarity.
FUNCTION_WORDS = _words(
    # articles and determiners
    "a an the this that these those some any each every all another such",
    # auxiliaries
    "is are was were be been being am do does did doing done have has had having will",
    "would shall should can could may might must",
    # pronouns
    "i me my mine myself you your yours yourself yourselves he him his himself she her",
    "hers herself it its itself we us our ours ourselves they them their theirs",
    "themselves one there here",
    # prepositions
    "of in on at to from by for with about into onto over under between among through",
    "during before after above below up down out off than via per as across around",
    "behind near since until within toward towards upon against along beside besides",
    "beyond inside outside past",
    # conjunctions
    "and or but if so then also too",
    # question words
    "what which who whom whose when where why how whether",
    # politeness
    "please pls thanks thank thx kindly hi hello hey dear sorry excuse",
)
_APOSTROPHES = str.maketrans({"\u2019": "'", "\u2018": "'", "\u02bc": "'"})
_QUOTED = re.compile(
    r'"([^"]+)"|\u201c([^\u201d]+)\u201d|\u00ab([^\u00bb]+)\u00bb|`([^`]+)`'
    r"|(?<![\w'])'([^']+)'(?![\w'])"
)
_NUMBER = re.compile(r"([-+]?)([$€£¥₹]?)(\d[\d,]*(?:\.\d+)?)([$€£¥₹]?)(%?)")
_EDGES = "\"'`()[]{}<>«»“”¿¡,;:!?*"
_FIRST_PERSON = frozenset({"i", "im", "ive", "id", "ill"})  # "I'm": after the ' is dropped
_SENTENCE_END = (".", "!", "?", ":", "\n")


@dataclass(frozen=True)
class _Token:
    text: str  # lower-cased, without surrounding punctuation or a possessive 's
    capitalised: bool  # capitalised where a sentence does not begin
    kind: Literal["word", "number", "identifier"]


@dataclass(frozen=True)
class _Reading:
    negations: Counter[str]
    numbers: tuple[str, ...]
    quotes: tuple[str, ...]
    tokens: tuple[_Token, ...]


def disagreement(cached: str, asked: str) -> Rule | None:
    """The first rule on which ``asked`` and the ``cached`` question disagree (its answer
    must not be served), or None when the gate lets the candidate through."""
    first, second = _read(cached), _read(asked)
    if first.negations != second.negations:
        return "negation"
    if first.numbers != second.numbers:
        return "numbers"
    if first.quotes != second.quotes:
        return "quotes"
    names = {token.text for token in (*first.tokens, *second.tokens) if _is_name(token)}
    if _names(first, names) != _names(second, names):
        return "names"
    if not _same_cycle(_shared_order(first, second), _shared_order(second, first)):
        return "order"
    return None


def _read(text: str) -> _Reading:
    text = text.translate(_APOSTROPHES)
    quotes = tuple(
        " ".join(next(group for group in match.groups() if group).lower().split())
        for match in _QUOTED.finditer(text)
    )
    negations: Counter[str] = Counter()
    numbers: list[str] = []
    tokens: list[_Token] = []
    sentence_start = True
    for raw in text.split():
        stripped = raw.strip(_EDGES).rstrip(".")
        starts, sentence_start = sentence_start, raw.endswith(_SENTENCE_END)
        if not stripped:
            continue
        lowered = stripped.lower()
        if (number := _number(stripped)) is not None:
            numbers.append(number)
            continue
        if _is_identifier(lowered):
            tokens.append(_Token(lowered, False, "identifier"))
            continue
        for word in re.findall(r"[^\W\d_]+(?:'[^\W\d_]+)?", stripped):
            low = word.lower()
            if low.endswith("n't") or low == "cannot":
                negations["not"] += 1
                continue
            low = low.removesuffix("'s").replace("'", "")
            if low in NEGATIONS:
                negations[low] += 1
                continue
            capitalised = not starts and word[0].isupper() and low not in _FIRST_PERSON
            tokens.append(_Token(low, capitalised, "word"))
            starts = False
    return _Reading(negations, tuple(numbers), quotes, tuple(tokens))


def _number(token: str) -> str | None:
    """A number's canonical form (sign, currency, value, percent), or None."""
    match = _NUMBER.fullmatch(token)
    if match is None:
        return None
    sign, before, digits, after, percent = match.groups()
    try:
        value = Decimal(digits.replace(",", "")).normalize()
    except InvalidOperation:
        return None
    return f"{'-' if sign == '-' else ''}{before or after}{value:f}{percent}"


def _is_identifier(word: str) -> bool:
    return any(char.isdigit() for char in word) or any(char in "_@./" for char in word[1:-1])


def _is_name(token: _Token) -> bool:
    return token.kind == "identifier" or token.capitalised


def _names(reading: _Reading, names: set[str]) -> Counter[str]:
    """Every occurrence of the names either message has (a name may begin a sentence in
    one and stand in the middle of the other)."""
    return Counter(token.text for token in reading.tokens if token.text in names)


def _same_cycle(first: list[str], second: list[str]) -> bool:
    """Whether the shared words come in the same order, or in the same order with a block
    moved from the front to the back ("On Friday, book a table" and "Book a table on
    Friday"), which keeps every word's neighbours in the cycle. A swap of roles does
    not ("alice pays bob", "bob pays alice"); with two words any move is a swap."""
    if first == second:
        return True
    if len(first) < 3:
        return False
    return any(first[shift:] + first[:shift] == second for shift in range(1, len(first)))


def _shared_order(reading: _Reading, other: _Reading) -> list[str]:
    """``reading``'s content words that ``other`` has too, in ``reading``'s order (each at
    its first occurrence)."""
    theirs = {token.text for token in other.tokens}
    order: list[str] = []
    for token in reading.tokens:
        word = token.text
        if word in theirs and word not in FUNCTION_WORDS and word not in order:
            order.append(word)
    return order
